"""One agent step, shared by ParallelSearch's ``think`` and ParallelMuse's ``rollout``.

How a model is prompted (:func:`prompt_style`, :func:`raw_prompt_kind`, :func:`first_prompt`)
and shown search results (:func:`passage_budget`), what a step call asks of it
(:func:`step_options`: stop sequences, token bound, the action grammar, or its answer-only
part, when the engine can constrain to it), and what comes back (:func:`read_step`: the
cleaned text with its stop sequence, the parsed action, counters, storable tool calls and token
logprobs). Both papers' loops (and the direct baseline) use these, so a step is prompted,
bounded and read the same way wherever it runs; the call itself is the node's (see
:mod:`~langgraph_parallel.agent.nodes`). :func:`step_prompt` says what the loop's next step is
sent on a state, so a caller that samples that step itself (ParallelMuse's distinct branches)
sends the same prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from langgraph_parallel.agent.chat import question_to_start
from langgraph_parallel.agent.context import LoopContext, PassageBudgetOption
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.errors import UserError, clean_text, storable
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.prompts import RawPrompt, opening_prompt
from langgraph_parallel.protocol import (
    STOP_SEQUENCES,
    Action,
    action_regex,
    answer_regex,
    parse_action,
    restore_stop_sequence,
)

__all__ = [
    "StepPrompt",
    "StepReply",
    "constrained_regex",
    "first_prompt",
    "passage_budget",
    "prompt_style",
    "raw_prompt_kind",
    "read_step",
    "step_options",
    "step_prompt",
]


@dataclass(frozen=True)
class StepReply:
    """What one model step produced.

    Attributes:
        text: The generated text, cleaned, ending with its stop sequence if it stopped at one.
        action: The parsed action.
        usage: Token counters of the call (``prompt_tokens``, ``cached_prompt_tokens``, ...).
        counters: ``llm_calls`` 1, the usage, and ``truncated_steps`` 1 if ``max_tokens`` cut it.
        tool_calls: The reply's tool calls in a form every checkpointer stores.
        logprobs: Token logprobs (OpenAI shape), storable; empty when the model gives none.
    """

    text: str
    action: Action
    usage: dict[str, int]
    counters: dict[str, int]
    tool_calls: list[Any] = field(default_factory=list)
    logprobs: list[Any] = field(default_factory=list)


def prompt_style(model: BaseChatModel, context: LoopContext) -> Literal["chat", "raw"]:
    """Resolve ``context.prompt_style`` for ``model`` (``auto``: the style it declares)."""
    if context.prompt_style != "auto":
        return context.prompt_style
    return policy_of(model).style


def constrained_regex(
    model: BaseChatModel, style: Literal["chat", "raw"], constrain: bool | None, regex: str
) -> str | None:
    """Return ``regex`` when this step should use the engine's structured outputs, else ``None``.

    ``constrain=None`` means on for models that declare constrained decoding (``ChatVLLM``,
    ``ChatVLLMServer``) in ``raw`` style. Shared by every node that constrains a step, so the
    rule lives in one place.

    Raises:
        UserError: ``constrain=True`` for a model without structured outputs.
    """
    supported = policy_of(model).constrained_decoding
    if constrain is None:
        constrain = style == "raw" and supported
    if not constrain:
        return None
    if not supported:
        raise UserError(
            "constrain=True needs a model with structured outputs (ChatVLLM); "
            "set constrain=False for this model."
        )
    return regex


def raw_prompt_kind(model: BaseChatModel) -> RawPrompt:
    """Return the raw prompt a model wants: ``rules`` for trained policies, else ``few_shot``.

    What the model declares (:func:`~langgraph_parallel.agent.policy.policy_of`): the trained
    folders' cards say ``"raw_prompt": "rules"``.
    """
    return policy_of(model).raw_prompt


def passage_budget(model: BaseChatModel, requested: PassageBudgetOption = "auto") -> int | None:
    """Resolve a factory's ``passage_sentences``: ``auto`` takes the model's declared budget.

    A policy trained on observations cut to N sentences per passage should read the same cut
    at inference, so the budget travels with the model: it is part of what the model declares
    (:func:`~langgraph_parallel.agent.policy.policy_of`: a trained folder's card, or a
    ``passage_sentences`` attribute); a model that declares none gets whole passages.

    Args:
        model: The graph's model.
        requested: The caller's value; anything but ``auto`` overrides the model's.

    Raises:
        UserError: The model declares a budget that is not a positive integer.
    """
    if requested != "auto":
        return requested
    return policy_of(model).passage_sentences


def first_prompt(
    question: str,
    style: Literal["chat", "raw"],
    context: LoopContext,
    kind: RawPrompt = "few_shot",
) -> str:
    """Build the opening prompt of the agent for ``question``.

    ``kind`` picks the raw prompt (:func:`~langgraph_parallel.prompts.raw_prompt`). The
    context's settings applied to :func:`~langgraph_parallel.prompts.opening_prompt`, which a
    tool-calling policy in ``create_agent`` uses too, so both transcripts open alike.
    """
    return opening_prompt(question, style, context.decompose, kind, context.instruction)


@dataclass(frozen=True)
class StepPrompt:
    """What the loop's next step is sent: the transcript so far and the messages it adds.

    Attributes:
        question: The question this step starts (its first step), else ``None``.
        history: The transcript the step goes on from (empty when a question starts).
        new: The messages the step adds before its call (the opening prompt of a question).
        steps: This step's number, 1 for a question's first.
    """

    question: str | None
    history: list[BaseMessage]
    new: list[BaseMessage]
    steps: int

    @property
    def messages(self) -> list[BaseMessage]:
        """The prompt: ``history + new``."""
        return [*self.history, *self.new]

    def answer_only(self, context: LoopContext) -> bool:
        """Whether this is the final answer-only step (a search at step ``max_turns`` ran)."""
        return context.final_answer_step and self.steps > context.max_turns


def step_prompt(
    model: BaseChatModel,
    state: Mapping[str, Any],
    context: LoopContext,
    style: Literal["chat", "raw"],
) -> StepPrompt:
    """Return what the loop's next step on ``state`` is sent (see :class:`StepPrompt`).

    A question starts (:func:`~.chat.question_to_start`) with its opening prompt
    (:func:`first_prompt`) on an empty transcript; otherwise the step goes on from the state's
    ``transcript``.

    Raises:
        UserError: A question starts and the state asks none.
    """
    question = question_to_start(state)
    if question is None:
        history = list(state.get("transcript") or [])
        return StepPrompt(None, history, [], int(state.get("steps") or 0) + 1)
    prompt = first_prompt(question, style, context, raw_prompt_kind(model))
    return StepPrompt(question, [], [HumanMessage(prompt)], 1)


def step_options(
    model: BaseChatModel,
    context: LoopContext,
    *,
    answer_only: bool = False,
    keep_logprobs: bool = True,
    **sampling: Any,
) -> dict[str, Any]:
    """Return the call options of one step: stop sequences, ``max_tokens``, the action regex.

    Args:
        model: The step's model (decides whether the regex applies; see
            :func:`constrained_regex`).
        context: The run's settings.
        answer_only: The step may only answer (the final answer-only step): the regex is
            :func:`~langgraph_parallel.protocol.answer_regex` instead of the full action
            grammar. A model without structured outputs gets the same options as any step.
        keep_logprobs: The step's token alternatives are read (ParallelMuse's uncertainty).
            When not, this package's models (those with structured outputs) are asked for
            none (``top_logprobs=0``): the top-16 alternatives cost 1.4% of a
            ``parallel-search`` question's engine time on the 2-core CPU for the same tokens
            (``benchmarks/latency/``, the replayed calls). Other models get their own settings.
        **sampling: More options (``temperature``, ``top_p``, ``seed``) passed as they are.
    """
    options: dict[str, Any] = {"stop": list(STOP_SEQUENCES), "max_tokens": context.max_tokens}
    options.update(sampling)
    style = prompt_style(model, context)
    if answer_only:
        grammar = answer_regex(context.think_max_chars)
    else:
        grammar = action_regex(context.decompose, context.think_max_chars)
    regex = constrained_regex(model, style, context.constrain, grammar)
    if regex:
        options["regex"] = regex
    if not keep_logprobs and policy_of(model).constrained_decoding:
        options["top_logprobs"] = 0
    return options


def read_step(reply: BaseMessage) -> StepReply:
    """Read a model reply as a step (see :class:`StepReply`)."""
    metadata = getattr(reply, "response_metadata", None) or {}
    text = clean_text(restore_stop_sequence(str(reply.text), metadata.get("stop_reason")))
    tool_calls = list(getattr(reply, "tool_calls", None) or [])
    usage = usage_counters(reply)
    counters: dict[str, int] = {"llm_calls": 1, **usage}
    if metadata.get("finish_reason") == "length":
        counters["truncated_steps"] = 1  # the step hit max_tokens
    # Token strings can carry lone surrogates, as the text can: cleaned alike (one character
    # for one), so token widths still match the text.
    logprobs = storable(list((metadata.get("logprobs") or {}).get("content") or []))
    return StepReply(
        text=text,
        action=parse_action(text, tool_calls or None),
        usage=usage,
        counters=counters,
        tool_calls=[storable(dict(call)) for call in tool_calls],
        logprobs=logprobs,
    )
