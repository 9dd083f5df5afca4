"""The ``think`` node: one model call per step, parsed into an action, routed with ``Command``."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, RetryPolicy

from langgraph_parallel.agent.context import SearchContext
from langgraph_parallel.agent.state import ParallelSearchState
from langgraph_parallel.errors import (
    UserError,
    clean_text,
    reported_error,
    storable,
)
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.prompts import RawPrompt, parallel_search_instruction, raw_prompt
from langgraph_parallel.protocol import (
    INVALID_ACTION_OBSERVATION,
    STOP_SEQUENCES,
    Action,
    action_regex,
    parse_action,
    restore_stop_sequence,
)

ThinkRoute = Literal["fan_out", "think", "answer", "__end__"]

STEPS_PER_TURN = 4
"""Super-steps of one search turn: ``think``, ``fan_out``, ``search``, ``observe``."""

# A node running with ``remaining_steps == r`` may hand over to a node that then runs with
# ``r - 1``; the run's last node needs ``remaining_steps >= 1`` or LangGraph raises
# GraphRecursionError. So ``answer`` after this step needs 2, and a search turn needs its four
# steps plus a last ``think`` and ``answer``.
_STEPS_TO_ANSWER = 2
_STEPS_TO_SEARCH = STEPS_PER_TURN + _STEPS_TO_ANSWER


MIN_RECURSION_LIMIT = 100
"""Floor of the default ``recursion_limit``: per-run ``max_turns`` up to 25 still fit."""


def recursion_limit_for(max_turns: int) -> int:
    """Return a default ``recursion_limit`` with room for ``max_turns`` turns and the answer.

    ``think`` bounds the loop by ``max_turns`` itself, so the limit is only a safety net and is
    generous: at least :data:`MIN_RECURSION_LIMIT`, so a per-run ``max_turns`` a little over the
    build-time one still fits.
    """
    needed = STEPS_PER_TURN * max_turns + _STEPS_TO_ANSWER + 4  # a few steps of slack
    return max(MIN_RECURSION_LIMIT, needed)


def prompt_style(model: BaseChatModel, context: SearchContext) -> Literal["chat", "raw"]:
    """Resolve ``context.prompt_style`` for ``model`` (``auto`` asks in-process models)."""
    if context.prompt_style != "auto":
        return context.prompt_style
    style = getattr(model, "style", None)
    return "raw" if style == "raw" else "chat"


def constrained_regex(
    model: BaseChatModel, style: Literal["chat", "raw"], constrain: bool | None, regex: str
) -> str | None:
    """Return ``regex`` when this step should use the engine's structured outputs, else ``None``.

    ``constrain=None`` means on for models with a ``regex`` setting (``ChatVLLM``) in ``raw``
    style. Shared by every node that constrains a step, so the rule lives in one place.

    Raises:
        UserError: ``constrain=True`` for a model without structured outputs.
    """
    supported = hasattr(model, "regex")
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

    ``ChatVLLM`` reads it from the model card of a trained folder (``"raw_prompt": "rules"``)
    and reports it as ``prompt_kind``; other models may set a ``raw_prompt`` attribute; any
    other model gets the few-shot demos.
    """
    kind = getattr(model, "prompt_kind", None) or getattr(model, "raw_prompt", None)
    return "rules" if kind == "rules" else "few_shot"


def first_prompt(
    question: str,
    style: Literal["chat", "raw"],
    context: SearchContext,
    kind: RawPrompt = "few_shot",
) -> str:
    """Build the opening prompt of the agent for ``question`` (``kind``: see :func:`raw_prompt`)."""
    if style == "raw":
        return raw_prompt(question, context.decompose, kind)
    template = context.instruction or parallel_search_instruction(context.decompose)
    return template.replace("{question}", question)


class ThinkNode:
    """Call the model once, parse its action, and route.

    Routing (``Command``): an answer goes to ``answer``; a search goes to ``fan_out`` unless this
    was the last allowed step; an invalid step gets the Search-R1 invalid-action observation and
    another ``think`` if steps remain. A failing model call ends the run with the error as
    ``stop_reason`` (one-question failures must not kill a batch), except :class:`UserError`,
    which is a set-up problem the caller has to see; transient errors are first retried under
    ``retry`` (see :mod:`~langgraph_parallel.errors`).

    Limits: a step is the last one when ``max_turns`` steps are used or when the run's
    ``recursion_limit`` leaves too few super-steps for another search turn (the state's
    ``remaining_steps``); the run then ends with ``stop_reason`` ``max_turns: ...`` or
    ``recursion_limit: ...`` instead of a ``GraphRecursionError``.

    Args:
        model: Any LangChain chat model; ``ChatVLLM`` adds constrained decoding and logprobs.
        defaults: Settings used when the run passes no context.
        retry: The node's retry policy (so the last attempt reports instead of raising).
    """

    def __init__(
        self, model: BaseChatModel, defaults: SearchContext, retry: RetryPolicy | None = None
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry

    def __call__(
        self, state: ParallelSearchState, runtime: Runtime[SearchContext]
    ) -> Command[ThinkRoute]:
        """Run one step."""
        context = runtime.context or self.defaults
        history: list[BaseMessage] = list(state.get("messages") or [])
        new: list[BaseMessage] = []
        if not history:
            style = prompt_style(self.model, context)
            question = clean_text(state["question"])
            prompt = first_prompt(question, style, context, raw_prompt_kind(self.model))
            new.append(HumanMessage(prompt))
        steps = int(state.get("steps") or 0) + 1
        remaining = state.get("remaining_steps")
        if remaining is not None and remaining < _STEPS_TO_ANSWER:
            # Not even the answer node fits: end here, before spending a model call.
            reason = _recursion_reason(steps - 1)
            ended: dict[str, Any] = {
                "messages": new,
                "answer": None,
                "stop_reason": reason,
                "counters": {},
            }
            return Command(update=ended, goto="__end__")
        try:
            reply = self.model.invoke(history + new, **self._call_options(context))
        except Exception as exc:  # reported per question; see class docstring
            reason = f"model_error: {reported_error(exc, runtime, self.retry)}"
            failed = {"messages": new, "steps": 1, "answer": None, "stop_reason": reason}
            return Command(update=failed, goto="answer")
        metadata = reply.response_metadata or {}
        text = clean_text(restore_stop_sequence(str(reply.text), metadata.get("stop_reason")))
        tool_calls = getattr(reply, "tool_calls", None) or []
        action = parse_action(text, tool_calls or None)
        # Keep the transcript light: logprobs stay out of the graph state (ParallelMuse keeps
        # them in its own trajectories).
        counters: dict[str, int] = {"llm_calls": 1, **usage_counters(reply)}
        if metadata.get("finish_reason") == "length":
            counters["truncated_steps"] = 1  # the step hit max_tokens
        stored = [storable(dict(call)) for call in tool_calls]
        update: dict[str, Any] = {
            "messages": [*new, AIMessage(content=text, tool_calls=stored)],
            "steps": 1,
            "counters": counters,
        }
        out_of_steps = remaining is not None and remaining < _STEPS_TO_SEARCH
        return self._route(action, update, steps, context, out_of_steps)

    def _call_options(self, context: SearchContext) -> dict[str, Any]:
        options: dict[str, Any] = {"stop": list(STOP_SEQUENCES), "max_tokens": context.max_tokens}
        style = prompt_style(self.model, context)
        regex = constrained_regex(
            self.model, style, context.constrain, action_regex(context.decompose)
        )
        if regex:
            options["regex"] = regex
        return options

    @staticmethod
    def _route(
        action: Action,
        update: dict[str, Any],
        steps: int,
        context: SearchContext,
        out_of_steps: bool = False,
    ) -> Command[ThinkRoute]:
        last_step = steps >= context.max_turns or out_of_steps
        if action.kind == "answer":
            update.update(answer=action.answer, stop_reason="answered")
            return Command(update=update, goto="answer")
        if action.kind == "search" and not last_step:
            queries = list(action.queries)
            if not context.decompose:
                # Search-R1 baseline: whatever the model wrote is one query.
                queries = [" ## ".join(queries)]
            update["queries"] = queries
            return Command(update=update, goto="fan_out")
        if last_step:
            if action.kind == "invalid":
                update["counters"]["invalid_steps"] = 1
            reason = f"max_turns: {context.max_turns} model steps used without an answer"
            if steps < context.max_turns:
                reason = _recursion_reason(steps)
            update.update(answer=None, stop_reason=reason)
            return Command(update=update, goto="answer")
        update["messages"].append(HumanMessage(INVALID_ACTION_OBSERVATION))
        update["counters"]["invalid_steps"] = 1
        return Command(update=update, goto="think")


def _recursion_reason(steps: int) -> str:
    return (
        f"recursion_limit: too few graph steps left for another turn after {steps} model "
        "steps; raise config['recursion_limit'] (or lower max_turns)"
    )


def answer_node(state: ParallelSearchState) -> dict[str, Any]:
    """Finish the run; a run without an answer always carries a reason."""
    answer = state.get("answer")
    return {"answer": answer, "stop_reason": state.get("stop_reason") or "no_answer"}
