"""What a model declares to the agent: :class:`PolicySpec`, read once, without starting an engine.

The graphs ask a model what it declares here: the prompt style it reads (``chat`` messages or
one ``raw`` document), which raw prompt (the few-shot demos or the ``rules`` a trained policy
learned), the passage budget its observations were cut to in training, whether it decodes under
a regular expression (vLLM structured outputs), whether its replies carry token logprobs
(ParallelMuse ranks steps by them), whether one call returns several samples (``n``), whether it
runs on an engine in this process (to start it before a question, or empty its prefix cache),
and its context window. :func:`policy_of` is the one place that reads the answers.

Why by declaration rather than by trying: a wrong guess fails late (a step decoded without its
grammar, a ParallelMuse run with nothing to rank), and asking the in-process model by touching
its engine would start one while a graph is being built. ``ChatVLLM`` and ``ChatVLLMServer``
declare a spec from the model card (``declared_policy()``, read from disk); the training
policy declares its own; any other chat model may carry a ``policy`` (a :class:`PolicySpec`),
or declare by attributes (``prompt_style``, ``raw_prompt``, ``passage_sentences``, a ``regex``
setting), else it gets the defaults of a chat model (``ChatOpenAI(logprobs=True)`` declares
logprobs by its own field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langgraph_parallel.errors import UserError
from langgraph_parallel.prompts import RawPrompt

__all__ = ["PolicySpec", "policy_of"]


@dataclass(frozen=True)
class PolicySpec:
    """What a model declares: how to prompt it and what its replies can carry.

    Attributes:
        style: ``raw`` (one document continued) or ``chat`` (the tokenizer's chat template).
        raw_prompt: In ``raw`` style, the few-shot demos or the ``rules`` alone.
        passage_sentences: The per-passage observation budget it was trained with (``None``:
            whole passages).
        constrained_decoding: It accepts a ``regex`` call option (the action grammar).
        logprobs: Its replies carry token logprobs.
        multi_sample: One call with the ``n`` option returns ``n`` samples of the prompt, which
            the engine prefills once (vLLM's ``SamplingParams.n``; ``ChatVLLM``,
            ``ChatVLLMServer``). Without it, several samples are several calls.
        in_process_engine: It runs on an engine in this process, which a caller may start
            ahead of the first question (``model.worker``) or empty of its prefix cache
            (``model.reset_prefix_cache()``).
        context_tokens: The most tokens one call may hold, prompt and reply (the engine's
            ``max_model_len``), for a model that also counts a prompt's tokens exactly
            (``get_num_tokens_from_messages``): the agent then checks a prompt before sending
            it. ``None``: unknown; a prompt the model refuses as too long is retried trimmed.
    """

    style: Literal["chat", "raw"] = "chat"
    raw_prompt: RawPrompt = "few_shot"
    passage_sentences: int | None = None
    constrained_decoding: bool = False
    logprobs: bool = False
    multi_sample: bool = False
    in_process_engine: bool = False
    context_tokens: int | None = None

    def __post_init__(self) -> None:
        budget = self.passage_sentences
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise UserError(
                f"the model declares passage_sentences={budget!r} (its card or attribute); it "
                "must be a positive integer or absent. Pass passage_sentences=N or None to the "
                "graph."
            )


def policy_of(model: Any) -> PolicySpec:
    """Return what ``model`` declares (see the module docstring); never starts an engine.

    Raises:
        UserError: The model declares a passage budget that is not a positive integer.
    """
    spec = getattr(model, "policy", None)
    if isinstance(spec, PolicySpec):
        return spec
    declared = getattr(model, "declared_policy", None)
    if callable(declared):
        return PolicySpec(**declared())
    # A model of its own may declare by attributes: the chat models' field names
    # (``prompt_style``/``raw_prompt``), or the properties they expose (``style``,
    # ``prompt_kind``); a ``regex`` setting means it decodes under one.
    style = getattr(model, "prompt_style", None) or getattr(model, "style", None)
    kind = getattr(model, "raw_prompt", None) or getattr(model, "prompt_kind", None)
    return PolicySpec(
        style="raw" if style == "raw" else "chat",
        raw_prompt="rules" if kind == "rules" else "few_shot",
        passage_sentences=getattr(model, "passage_sentences", None),
        constrained_decoding=hasattr(model, "regex"),
        logprobs=getattr(model, "logprobs", None) is True,
    )
