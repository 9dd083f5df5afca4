"""The ``think`` node: one model call per step, parsed into an action, routed with ``Command``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, RetryPolicy

from langgraph_parallel.agent.chat import (
    answer_message,
    extend_transcript,
    question_message,
    question_to_start,
    search_call,
)
from langgraph_parallel.agent.context import LoopContext, run_context
from langgraph_parallel.agent.events import emit
from langgraph_parallel.agent.given import given_step
from langgraph_parallel.agent.limits import (
    STEPS_TO_ANSWER,
    STEPS_TO_SEARCH,
    max_turns_reason,
    recursion_reason,
)
from langgraph_parallel.agent.nodes import Blocking, Body, DualNode, Invoke
from langgraph_parallel.agent.overflow import is_context_overflow, trimmed
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.agent.state import LoopState
from langgraph_parallel.agent.step import (
    StepReply,
    prompt_style,
    read_step,
    step_options,
    step_prompt,
)
from langgraph_parallel.errors import reported_error
from langgraph_parallel.models.sampling import configured_sampling
from langgraph_parallel.protocol import INVALID_ACTION_OBSERVATION, Action

ACT = "act"
"""The act's entry node when none is given (a ``ThinkNode`` used alone)."""


class ThinkNode(DualNode):
    """Call the model once, parse its action, and route.

    Routing (``Command``): an answer goes to ``answer``; a search goes to the act's entry
    node (``act``, the one its :class:`~.loop.Act` declares) unless no step could read its
    results; an invalid step gets the Search-R1 invalid-action observation
    and another ``think`` if steps remain. A failing model call ends the run with the error as
    ``stop_reason`` (one-question failures must not kill a batch), except :class:`UserError`,
    which is a set-up problem the caller has to see; transient errors are first retried under
    ``retry`` (see :mod:`~langgraph_parallel.errors`).

    Limits (``max_turns`` = M): a run makes at most M regular steps, each a search or an
    answer. With ``final_answer_step`` (the default), a search at step M still runs, and then
    one *final answer-only step* follows, as in Search-R1 after its turn loop: the same
    transcript, now ending with that search's observation, with the answer-only grammar
    (:func:`~langgraph_parallel.protocol.answer_regex`) where the model takes a regex, else
    the ordinary options. So a run makes at most M + 1 model calls and M search turns. That
    step counts like any other (``llm_calls``, tokens, ``steps``, the ``step`` event, which
    carries ``final_answer_step: True``) and adds ``counters["final_answer_steps"] = 1``. If
    it answers, the run ends as any answered run (``stop_reason`` ``answered``: callers that
    test for it need no new case; the counter tells the two apart). If not (a model that
    ignores the grammar and searches again, or an invalid step), its search is not run and the
    run ends with ``stop_reason`` ``max_turns: M model steps used without an answer; the final
    answer-only step ...``.
    Without ``final_answer_step`` a search at step M is not run and the run ends with
    ``max_turns: ...`` (at most M calls, M - 1 turns). An invalid step M ends the run either
    way (no new evidence for a final step to read). A ParallelMuse fork from the final step
    inherits M steps, so its own first step is again the final answer-only step.

    A step whose prompt no longer fits the model's context is made answer-only, over the
    transcript with the older observations' passages left out, then with all of them
    (:mod:`~langgraph_parallel.agent.overflow`); the run ends after it
    (``counters["trimmed_steps"] = 1``; ``answered``, or ``context_full: ...``). A model that
    declares its window (``PolicySpec.context_tokens``; ``ChatVLLM``) has each prompt counted
    before it is sent, so it is never sent one it must refuse; any other model's refusal is
    what says so, and the step then also counts ``counters["context_refusals"] = 1``. The
    state's transcript keeps every observation.

    The run's ``recursion_limit`` is checked too (the state's ``remaining_steps``): a search
    runs only while the super-steps for its turn, the next ``think`` and ``answer`` are left
    (:data:`~langgraph_parallel.agent.limits.STEPS_TO_SEARCH`), so the final step always
    fits after it; otherwise the run ends with ``stop_reason`` ``recursion_limit: ...``
    instead of a ``GraphRecursionError``.

    Every call passes the sampling options the run's config sets
    (:func:`~langgraph_parallel.models.sampling.sampling_config`; none by default) to the model,
    so a caller that samples (a ParallelMuse branch and its seed) runs this same step; a reply
    the run's config gives for the step's exact prompt (:mod:`~.given`) is taken without a call.

    Each step's reply goes into ``transcript`` as an ``AIMessage`` of the step text with the
    call's ``usage_metadata``; with ``keep_logprobs`` its ``response_metadata`` also keeps the
    token logprobs (``{"logprobs": {"content": [...]}}``, as ``ChatVLLM`` returns them) and the
    step text, which is what ParallelMuse scores a step by when it forks this loop.

    Args:
        model: Any LangChain chat model; ``ChatVLLM`` adds constrained decoding and logprobs.
        defaults: Settings used when the run passes no context.
        retry: The node's retry policy (so the last attempt reports instead of raising).
        keep_logprobs: Keep each step's token logprobs in its message (see above).
        act: The act's entry node, where a search step goes.
        fresh: Returns the update clearing the act's keys when a thread's new question starts.
    """

    def __init__(
        self,
        model: BaseChatModel,
        defaults: LoopContext,
        retry: RetryPolicy | None = None,
        *,
        keep_logprobs: bool = False,
        act: str = ACT,
        fresh: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry
        self.keep_logprobs = keep_logprobs
        self.act = act
        self.fresh = fresh

    def body(self, state: LoopState, runtime: Runtime[LoopContext]) -> Body[Command[str]]:
        """Run one step (one model call; see :mod:`~langgraph_parallel.agent.nodes`).

        The first step of a question (:func:`~.chat.question_to_start`) opens a fresh
        transcript; on a thread that ran one before, the question's own keys start again.
        The step's transcript messages and its chat view are written by :meth:`_shown`.
        """
        context = run_context(runtime, self.defaults)
        question_to_start(state)  # a missing question fails before any model use
        # What the model declares is read from its card on first use: off the event loop.
        style = yield Blocking(prompt_style, (self.model, context))
        prompt = step_prompt(self.model, state, context, style)
        routed = yield from self._step(
            state, runtime, context, prompt.history, prompt.new, prompt.steps
        )
        return self._shown(state, routed, prompt.question)

    def _step(
        self,
        state: LoopState,
        runtime: Runtime[LoopContext],
        context: LoopContext,
        history: list[BaseMessage],
        new: list[BaseMessage],
        steps: int,
    ) -> Body[tuple[Command[str], Action | None]]:
        """Call the model once over ``history + new`` and route.

        ``transcript`` in the update holds only this step's new messages (see :meth:`_shown`).
        """
        # Only a search at step max_turns leads here with more steps than max_turns (or a
        # ParallelMuse fork of such a run's last step): the answer-only step.
        final = context.final_answer_step and steps > context.max_turns
        remaining = state.get("remaining_steps")
        if remaining is not None and remaining < STEPS_TO_ANSWER:
            # Not even the answer node fits: end here, before spending a model call.
            reason = recursion_reason(steps - 1)
            ended: dict[str, Any] = {
                "transcript": new,
                "answer": None,
                "stop_reason": reason,
                "counters": {},
                "messages": [answer_message(None, reason)],
            }
            return Command(update=ended, goto="__end__"), None
        sampling = configured_sampling(None)
        options = step_options(
            self.model, context, answer_only=final, keep_logprobs=self.keep_logprobs, **sampling
        )
        trimmed_step = refused = False
        sent = history + new
        # A model that declares its window and counts tokens exactly (ChatVLLM) is never sent
        # a prompt it must refuse: too long, the step goes answer-only over a trimmed prompt.
        window = policy_of(self.model).context_tokens
        too_long = False
        if window is not None:
            size = yield Blocking(self.model.get_num_tokens_from_messages, (sent,))
            too_long = size + context.max_tokens > window
        try:
            if too_long:
                fitted = yield from self._answer_trimmed(sent, context, sampling, window)
                if fitted is None:
                    reason = f"context_full: {_NO_ROOM.format(window=window)}"
                    ended = {"transcript": new, "answer": None, "stop_reason": reason}
                    return Command(update=ended, goto="answer"), None
                reply, trimmed_step = fitted, True
            else:
                # A reply sampled for this very prompt before the run (agent.given) is the
                # step's; any other prompt calls the model.
                given = given_step(sent)
                reply = given if given is not None else (yield Invoke(self.model, sent, options))
        except Exception as exc:  # reported per question; see class docstring
            fitted = None
            if is_context_overflow(exc) and not too_long:
                # The retry is a model call too: its failure is the step's reported error,
                # not an exception escaping the graph from inside this handler.
                try:
                    fitted = yield from self._answer_trimmed(sent, context, sampling, None)
                except Exception as retry_exc:  # reported like the first failure
                    exc = retry_exc
            if fitted is None:
                reason = f"model_error: {reported_error(exc, runtime, self.retry)}"
                failed = {"transcript": new, "steps": 1, "answer": None, "stop_reason": reason}
                return Command(update=failed, goto="answer"), None
            reply, trimmed_step, refused = fitted, True, True
        try:
            step = read_step(reply)
        except Exception as exc:  # a reply of the wrong shape: reported like a failing call
            reason = f"model_error: {reported_error(exc, runtime, self.retry)}"
            failed = {"transcript": new, "steps": 1, "answer": None, "stop_reason": reason}
            return Command(update=failed, goto="answer"), None
        update: dict[str, Any] = {
            "transcript": [*new, self._message(step, reply)],
            "steps": 1,
            "counters": dict(step.counters),
        }
        if refused:  # the model refused a prompt (no declared window to check it against)
            update["counters"]["context_refusals"] = 1
        out_of_steps = remaining is not None and remaining < STEPS_TO_SEARCH
        action = step.action
        emit(
            runtime,
            "step",
            step=steps,
            action=action.kind,
            queries=list(action.queries),
            answer=action.answer,
            final_answer_step=final or trimmed_step,
        )
        if trimmed_step:
            why = (
                "context_full: the prompt no longer fits the model's context; the answer-only "
                "step over the trimmed transcript"
            )
            return _last_step_route(action, update, "trimmed_steps", why), action
        if final:
            why = f"{max_turns_reason(context.max_turns)}; the final answer-only step"
            return _last_step_route(action, update, "final_answer_steps", why), action
        return self._route(action, update, steps, context, out_of_steps), action

    def _shown(
        self,
        state: LoopState,
        routed: tuple[Command[str], Action | None],
        question: str | None,
    ) -> Command[str]:
        """Write the step's transcript messages and its chat view (:mod:`~.chat`).

        A search step shows as a ``search`` tool call with the sub-queries it will run; the
        answer is shown by ``answer``. A question started here is added to the chat unless the
        chat asked it, and on a thread that ran one before, the question's own keys (steps,
        counters, results, turn, answer) start again.
        """
        command, action = routed
        update = dict(cast(dict[str, Any], command.update))
        new = list(update.pop("transcript", []))
        base: Mapping[str, Any] = {} if question is not None else state
        update["transcript"] = extend_transcript(base, new)
        chat = list(update.pop("messages", []))
        if action is not None and command.goto == self.act:
            chat.append(search_call(action.think, update["queries"]))
        if question is not None:
            update["question"] = question
            chat = [*question_message(state, question), *chat]
            update.setdefault("stop_reason", None)
            update.setdefault("answer", None)
            if state.get("transcript") or state.get("steps"):  # the thread asked one before
                update["steps"] = Overwrite(update.get("steps", 0))
                update["counters"] = Overwrite(dict(update.get("counters") or {}))
                update.update(self.fresh())
                update.setdefault("queries", [])
        if chat:
            update["messages"] = chat
        return Command(update=update, goto=command.goto)

    def _message(self, step: StepReply, reply: BaseMessage) -> AIMessage:
        """Return the step's message (class docstring): logprobs only when they are kept."""
        metadata: dict[str, Any] = {}
        if self.keep_logprobs:
            metadata = {"logprobs": {"content": step.logprobs}, "step_text": step.text}
        return AIMessage(
            content=step.text,
            tool_calls=step.tool_calls,
            response_metadata=metadata,
            usage_metadata=getattr(reply, "usage_metadata", None),
        )

    def _answer_trimmed(
        self,
        prompt: list[BaseMessage],
        context: LoopContext,
        sampling: dict[str, Any],
        window: int | None,
    ) -> Body[BaseMessage | None]:
        """Answer-only, over the prompt with older observations left out, then all of them.

        With the model's ``window`` known, a trimmed prompt is counted first and only sent if it
        fits; without, the model's refusal says so. Returns the reply, or ``None`` when no
        trimmed prompt fits either (see :mod:`~langgraph_parallel.agent.overflow`).
        """
        options = step_options(
            self.model, context, answer_only=True, keep_logprobs=self.keep_logprobs, **sampling
        )
        for keep_last in (True, False):
            messages = trimmed(prompt, keep_last)
            if messages is None:
                continue
            if window is not None:
                size = yield Blocking(self.model.get_num_tokens_from_messages, (messages,))
                if size + context.max_tokens > window:
                    continue
            try:
                reply: BaseMessage = yield Invoke(self.model, messages, options)
            except Exception as exc:
                if is_context_overflow(exc):
                    continue
                raise
            return reply
        return None

    def _route(
        self,
        action: Action,
        update: dict[str, Any],
        steps: int,
        context: LoopContext,
        out_of_steps: bool = False,
    ) -> Command[str]:
        last_step = steps >= context.max_turns or out_of_steps
        if action.kind == "answer":
            update.update(answer=action.answer, stop_reason="answered")
            return Command(update=update, goto="answer")
        # A search at step max_turns still runs when the final answer-only step will read it.
        may_search = steps < context.max_turns or context.final_answer_step
        if action.kind == "search" and may_search and not out_of_steps:
            queries = list(action.queries)
            if not context.decompose:
                # Search-R1 baseline: whatever the model wrote is one query.
                queries = [" ## ".join(queries)]
            update["queries"] = queries
            return Command(update=update, goto=self.act)
        if last_step:
            if action.kind == "invalid":
                update["counters"]["invalid_steps"] = 1
            reason = max_turns_reason(context.max_turns)
            if steps < context.max_turns or (action.kind == "search" and may_search):
                # Only the recursion limit kept this step's search (or the next step) from running.
                reason = recursion_reason(steps)
            update.update(answer=None, stop_reason=reason)
            return Command(update=update, goto="answer")
        update["transcript"].append(HumanMessage(INVALID_ACTION_OBSERVATION))
        update["counters"]["invalid_steps"] = 1
        return Command(update=update, goto="think")


def _last_step_route(
    action: Action, update: dict[str, Any], counter: str, why: str
) -> Command[str]:
    """End the run after an answer-only step (see :class:`ThinkNode`).

    Args:
        action: What the answer-only step wrote.
        update: The step's state update, completed here.
        counter: The counter of this kind of last step (``final_answer_steps`` after
            ``max_turns``, ``trimmed_steps`` over a trimmed transcript).
        why: The start of the stop reason when the step does not answer.
    """
    update["counters"][counter] = 1
    if action.kind == "answer":
        update.update(answer=action.answer, stop_reason="answered")
        return Command(update=update, goto="answer")
    if action.kind == "invalid":
        update["counters"]["invalid_steps"] = 1
    # A search here is not run: no step would be left to read it.
    did = "searched again" if action.kind == "search" else "wrote no valid answer"
    update.update(answer=None, stop_reason=f"{why} {did}")
    return Command(update=update, goto="answer")


_NO_ROOM = (
    "the prompt does not fit the model's context of {window} tokens, even with every "
    "observation's passages left out; no call was made"
)


def answer_node(state: LoopState) -> dict[str, Any]:
    """Finish the run, its answer shown in the chat; a run without an answer has a reason."""
    answer = state.get("answer")
    reason = state.get("stop_reason") or "no_answer"
    return {"answer": answer, "stop_reason": reason, "messages": [answer_message(answer, reason)]}
