"""The ``think`` node: one model call per step, parsed into an action, routed with ``Command``."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_parallel.context import SearchContext
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.prompts import few_shot_prompt, parallel_search_instruction
from langgraph_parallel.protocol import (
    INVALID_ACTION_OBSERVATION,
    STOP_SEQUENCES,
    Action,
    action_regex,
    parse_action,
    restore_stop_sequence,
)
from langgraph_parallel.state import ParallelSearchState

ThinkRoute = Literal["fan_out", "think", "answer"]


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


def first_prompt(question: str, style: Literal["chat", "raw"], context: SearchContext) -> str:
    """Build the opening prompt of the agent for ``question``."""
    if style == "raw":
        return few_shot_prompt(question, context.decompose)
    template = context.instruction or parallel_search_instruction(context.decompose)
    return template.replace("{question}", question)


class ThinkNode:
    """Call the model once, parse its action, and route.

    Routing (``Command``): an answer goes to ``answer``; a search goes to ``fan_out`` unless this
    was the last allowed step; an invalid step gets the Search-R1 invalid-action observation and
    another ``think`` if steps remain. A failing model call ends the run with the error as
    ``stop_reason`` (one-question failures must not kill a batch), except :class:`UserError`,
    which is a set-up problem the caller has to see.

    Args:
        model: Any LangChain chat model; ``ChatVLLM`` adds constrained decoding and logprobs.
        defaults: Settings used when the run passes no context.
    """

    def __init__(self, model: BaseChatModel, defaults: SearchContext) -> None:
        self.model = model
        self.defaults = defaults

    def __call__(
        self, state: ParallelSearchState, runtime: Runtime[SearchContext]
    ) -> Command[ThinkRoute]:
        """Run one step."""
        context = runtime.context or self.defaults
        history: list[BaseMessage] = list(state.get("messages") or [])
        new: list[BaseMessage] = []
        if not history:
            style = prompt_style(self.model, context)
            new.append(HumanMessage(first_prompt(state["question"], style, context)))
        steps = int(state.get("steps") or 0) + 1
        try:
            reply = self.model.invoke(history + new, **self._call_options(context))
        except UserError:
            raise
        except Exception as exc:  # reported per question; see class docstring
            reason = f"model_error: {type(exc).__name__}: {exc}"
            failed = {"messages": new, "steps": 1, "answer": None, "stop_reason": reason}
            return Command(update=failed, goto="answer")
        text = restore_stop_sequence(reply.text, (reply.response_metadata or {}).get("stop_reason"))
        action = parse_action(text, getattr(reply, "tool_calls", None) or None)
        # Keep the transcript light: logprobs stay out of the graph state (ParallelMuse keeps
        # them in its own trajectories).
        step = AIMessage(content=text, tool_calls=getattr(reply, "tool_calls", None) or [])
        update: dict[str, Any] = {
            "messages": [*new, step],
            "steps": 1,
            "counters": {"llm_calls": 1, **usage_counters(reply)},
        }
        return self._route(action, update, steps, context)

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
        action: Action, update: dict[str, Any], steps: int, context: SearchContext
    ) -> Command[ThinkRoute]:
        last_step = steps >= context.max_turns
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
            update.update(answer=None, stop_reason=reason)
            return Command(update=update, goto="answer")
        update["messages"].append(HumanMessage(INVALID_ACTION_OBSERVATION))
        update["counters"]["invalid_steps"] = 1
        return Command(update=update, goto="think")


def answer_node(state: ParallelSearchState) -> dict[str, Any]:
    """Finish the run; a run without an answer always carries a reason."""
    answer = state.get("answer")
    return {"answer": answer, "stop_reason": state.get("stop_reason") or "no_answer"}
