"""``PolicyChatModel``: the policy being trained, as a LangChain chat model for our graphs.

GRPO needs rollouts from the *current* weights, so the agent graph runs on the trainer's own
``transformers`` model. The graph calls the model from several threads at once (one per rollout
of a group); :class:`Batcher` gathers those calls into one left-padded ``generate`` so the group
decodes together, the way the vLLM engine batches concurrent branches.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from pydantic import ConfigDict, PrivateAttr

from langgraph_parallel.models.adapters import MODEL_CARD
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.models.replies import message_text
from langgraph_parallel.prompts import RawPrompt
from langgraph_parallel.protocol import STOP_SEQUENCES
from langgraph_parallel.train.batcher import Batcher


def cut_at_stop(text: str, stop: list[str]) -> str:
    """Keep ``text`` up to and including its first stop sequence (as vLLM does)."""
    ends = [text.find(s) + len(s) for s in stop if s in text]
    return text[: min(ends)] if ends else text


Decoding = Literal["plain", "merged", "static"]
"""How rollouts decode: ``plain`` (the PEFT model as it trains), ``merged`` (LoRA folded into
the base weights while decoding) or ``static`` (merged, with a static KV cache, which
``transformers`` compiles on a GPU, every batch padded to one shape: see
:attr:`PolicyChatModel.static_shape`)."""


@contextmanager
def merged_lora(model: Any) -> Iterator[None]:
    """Fold a PEFT model's LoRA into its base weights while it decodes; restore them exactly.

    Unmerged, every adapted linear layer launches four more kernels a token (the adapter's two
    matrices, the scaling and the sum), and a 135M model on a GPU spends its decoding time
    launching kernels. PEFT's own unmerge subtracts the product again, which in bfloat16 leaves
    rounding error in the frozen base weights that would accumulate over thousands of merges,
    so the base weights are copied before and written back after. Sampling from the merged
    weights differs from the unmerged forward pass of the loss by rounding only (as TRL's
    vLLM weight sync does). A model without LoRA layers is left as it is.
    """
    from peft.tuners.lora import LoraLayer

    bases: list[Any] = [m.get_base_layer() for m in model.modules() if isinstance(m, LoraLayer)]
    if not bases or not hasattr(model, "merge_adapter"):
        yield
        return
    saved = [base.weight.detach().clone() for base in bases]
    model.merge_adapter()
    try:
        yield
    finally:
        model.unmerge_adapter()
        for base, weight in zip(bases, saved, strict=True):
            base.weight.data.copy_(weight)


@contextmanager
def generation_mode(
    model: Any, checkpointing_kwargs: dict[str, Any] | None = None
) -> Iterator[None]:
    """Put a model in eval mode without gradient checkpointing while it generates.

    Generating in train mode with gradient checkpointing on (TRL's default) decodes without a
    KV cache and, with transformers 5, produces garbage: SmolLM2 wrote ``<-----...`` instead of
    ``<think> ...``. Both settings are restored afterwards.
    """
    was_training = bool(getattr(model, "training", False))
    checkpointing = bool(getattr(model, "is_gradient_checkpointing", False))
    if checkpointing:
        model.gradient_checkpointing_disable()
    model.eval()
    try:
        yield
    finally:
        if checkpointing:
            model.gradient_checkpointing_enable(checkpointing_kwargs)
        if was_training:
            model.train()


class PolicyChatModel(OneReplyChatModel):
    """A ``transformers`` causal LM as a raw-completion chat model (``style == "raw"``).

    Message contents are concatenated into one document the model continues, exactly like
    ``ChatVLLM`` in raw style, so the agent graph builds the same prompts in training and at
    inference. Sampling uses ``temperature``/``top_p``; generation stops after a stop sequence.

    Attributes:
        policy: The ``PreTrainedModel`` (the trainer's model, updated in place between steps).
        tokenizer: Its tokenizer.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    policy: Any
    tokenizer: Any
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 128
    extra_stop: tuple[str, ...] = ("\nQuestion:",)
    """Also stop here: a step that starts the few-shot prompt's next demo question has given no
    action, and decoding the rest of it only burns rollout time."""
    checkpointing_kwargs: dict[str, Any] | None = None
    """Passed back to ``gradient_checkpointing_enable`` after generating."""
    style: str = "raw"
    raw_prompt: str = "few_shot"
    """The prompt the graph builds for this policy (``rules`` after ``train sft``)."""
    decoding: Decoding = "plain"
    """How to decode (:data:`Decoding`); the same tokens are sampled up to rounding."""
    static_shape: tuple[int, int] = (128, 1536)
    """Rows and prompt tokens every ``static`` batch is padded to. The compiled decoder is
    built for one shape: on the H200 a second batch shape failed (AssertionError) and left it
    broken. Padding rows repeat the first prompt and are dropped; a batch that does not fit
    decodes ``merged`` (counted in ``timings()["static_misses"]``)."""
    _batcher: Batcher = PrivateAttr()
    _timings: dict[str, float] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        """Create the request batcher (pydantic hook)."""
        self._batcher = Batcher(self._generate_batch)

    def declared_policy(self) -> dict[str, Any]:
        """Return what the graphs read of this policy (``agent.policy.policy_of``).

        Raw style and its raw prompt; no constrained decoding, no logprobs.
        """
        return {"style": "raw", "raw_prompt": self.raw_prompt}

    def timings(self) -> dict[str, float]:
        """Seconds in ``generate``, decoding batches and their decode steps, so far."""
        return dict(self._timings)

    def expect(self, n: int, *, exact: bool = False) -> None:
        """Tell the batcher how many concurrent calls to wait for (the rollouts in flight).

        With ``exact``, every batch waits for all rollouts still running; each must call
        :meth:`finished` when it ends.
        """
        self._batcher.expect(n, exact=exact)

    def finished(self) -> None:
        """Note that a rollout ended: exact batching stops waiting for it."""
        self._batcher.finished()

    def respond(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> AIMessage:
        """Decode the raw-style prompt in the next batch; the reply carries its token counts."""
        prompt = "".join(message_text(m) for m in messages)  # the raw-style rule of ChatVLLM
        options = {
            "stop": (*(stop or STOP_SEQUENCES), *self.extra_stop),
            "max_tokens": int(kwargs.get("max_tokens", self.max_tokens)),
        }
        text, prompt_tokens, new_tokens = self._batcher.submit(prompt, options)
        usage = UsageMetadata(
            input_tokens=prompt_tokens,
            output_tokens=new_tokens,
            total_tokens=prompt_tokens + new_tokens,
        )
        return AIMessage(content=text, usage_metadata=usage)

    def _generate_batch(
        self, prompts: list[str], options: dict[str, Any]
    ) -> list[tuple[str, int, int]]:
        import torch

        tok = self.tokenizer
        tok.padding_side = "left"
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        n = len(prompts)
        batch = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        static: dict[str, Any] = {}
        if self.decoding == "static":
            rows, width = self.static_shape
            if n <= rows and batch["input_ids"].shape[1] <= width:
                padded = [*prompts, *[prompts[0]] * (rows - n)]
                batch = tok(
                    padded,
                    return_tensors="pt",
                    padding="max_length",
                    max_length=width,
                    add_special_tokens=False,
                )
                static = {"cache_implementation": "static"}
            else:
                self._timings["static_misses"] = self._timings.get("static_misses", 0.0) + 1
        batch = batch.to(self.policy.device)  # the trainer's model is on the GPU when there is one
        stop = list(options["stop"])
        merge = merged_lora(self.policy) if self.decoding != "plain" else nullcontext()
        began = time.perf_counter()
        with torch.no_grad(), generation_mode(self.policy, self.checkpointing_kwargs), merge:
            out = self.policy.generate(
                **batch,
                **static,
                do_sample=self.temperature > 0,
                temperature=self.temperature if self.temperature > 0 else None,
                top_p=self.top_p,
                max_new_tokens=options["max_tokens"],
                stop_strings=stop,
                tokenizer=tok,
                pad_token_id=pad_id,
            )
        width = batch["input_ids"].shape[1]
        spent = {"generate_s": time.perf_counter() - began, "batches": 1.0}
        spent["decode_steps"] = float(out.shape[1] - width)
        for key, value in spent.items():
            self._timings[key] = self._timings.get(key, 0.0) + value
        results = []
        for row, mask in zip(out[:n], batch["attention_mask"][:n], strict=True):
            new = [int(t) for t in row[width:].tolist()]
            while new and new[-1] == pad_id:
                new.pop()
            text = cut_at_stop(tok.decode(new, skip_special_tokens=True), stop)
            results.append((text, int(mask.sum()), len(new)))
        return results


def save_model(
    model: Any, tokenizer: Any, folder: Path, *, base: str, kind: RawPrompt = "few_shot"
) -> Path:
    """Save weights (LoRA merged in) and tokenizer, plus the card recording the prompt style."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))
    card = {
        "prompt_style": "raw",
        "raw_prompt": kind,
        "trained_from": base,
        "method": "GRPO (ParallelSearch reward)",
    }
    (folder / MODEL_CARD).write_text(json.dumps(card, indent=2) + "\n")
    return folder


def lora_config() -> Any:
    """Return the LoRA settings of ``--lora`` training: rank 16 on every linear layer."""
    from peft import LoraConfig

    return LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
