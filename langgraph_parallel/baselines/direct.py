"""The ``direct`` baseline: one model call answers the question, with no retrieval.

It measures what the model knows on its own, so the search graphs' gains can be read against it.
The graph has the same input and output keys as the ParallelSearch graph (``answer``,
``stop_reason``, ``counters`` with all six keys, ``search_results`` (always empty),
``messages`` (the chat) and ``transcript`` (the prompt and the reply)), so
:func:`~langgraph_parallel.agent.run.run_question` and the benchmark harness treat every graph
alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, RetryPolicy

from langgraph_parallel.agent.chat import (
    answer_message,
    asked_question,
    extend_transcript,
    question_message,
)
from langgraph_parallel.agent.checks import check_model
from langgraph_parallel.agent.context import PromptStyleOption, run_context
from langgraph_parallel.agent.nodes import Blocking, Body, DualNode, Invoke, as_node
from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.agent.step import constrained_regex, prompt_style, read_step
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY, reported_error
from langgraph_parallel.parallel_search.state import (
    ParallelSearchInput,
    ParallelSearchOutput,
    ParallelSearchState,
)
from langgraph_parallel.prompts import DIRECT_FEW_SHOT, DIRECT_INSTRUCTION

__all__ = ["DIRECT_OPTIONS", "DirectContext", "DirectNode", "create_direct_graph", "direct_prompt"]

DIRECT_OPTIONS = frozenset(
    {
        "prompt_style",
        "constrain",
        "instruction",
        "max_tokens",
        "retry_policy",
        "checkpointer",
        "store",
        "name",
    }
)
"""Keyword options :func:`create_direct_graph` takes (the registry drops search-loop options)."""

# One answer element, bounded like the agent's answers in protocol.action_regex.
_ANSWER_REGEX = "<answer> ?[^ \\t\\r\\n<][^<\\n]{0,79}</answer>"


@dataclass(frozen=True, kw_only=True)
class DirectContext:
    """Settings of the direct baseline (the graph's ``context_schema``).

    Attributes:
        prompt_style: ``raw`` (few-shot completion, :data:`~langgraph_parallel.prompts.
            DIRECT_FEW_SHOT`), ``chat`` (:data:`~langgraph_parallel.prompts.DIRECT_INSTRUCTION`
            in a user message) or ``auto`` (``raw`` for models whose ``style`` is ``raw``, such
            as the embedded ones on ``ChatVLLM``).
        constrain: Constrain the reply to one ``<answer>`` element with the engine's structured
            outputs. ``None``: on for models with a ``regex`` setting (``ChatVLLM``) in ``raw``
            style.
        instruction: Chat-style template with a ``{question}`` placeholder; ``None`` uses
            ``DIRECT_INSTRUCTION``.
        max_tokens: Token limit of the reply.
    """

    prompt_style: PromptStyleOption = "auto"
    constrain: bool | None = None
    instruction: str | None = None
    max_tokens: int = 64

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1 (got {self.max_tokens}).")
        if self.instruction is not None and "{question}" not in self.instruction:
            raise ValueError("instruction must contain the placeholder {question}.")


def direct_prompt(
    question: str, style: Literal["chat", "raw"], instruction: str | None = None
) -> str:
    r"""Build the prompt of the direct baseline.

    Args:
        question: The question; surrounding whitespace is stripped.
        style: ``raw`` gives the few-shot document ending in ``"Question: ...\n"``, whose demos
            continue with ``<answer>``; ``chat`` fills the instruction template.
        instruction: Chat template overriding ``DIRECT_INSTRUCTION``.

    Returns:
        The prompt text.
    """
    if style == "raw":
        return f"{DIRECT_FEW_SHOT}Question: " + question.strip() + "\n"
    # Replacement, not str.format: the question may contain braces.
    return (instruction or DIRECT_INSTRUCTION).replace("{question}", question.strip())


class DirectNode(DualNode):
    """Ask the model once and parse its ``<answer>``.

    A reply without a complete ``<answer>`` element ends the run with ``answer=None`` and a
    ``no_answer: ...`` stop reason. A failing model call is reported as ``model_error: ...``
    (one failed question must not end a benchmark), except :class:`UserError`, a set-up problem;
    transient errors first get the attempts of ``retry``.

    Args:
        model: Any LangChain chat model.
        defaults: Settings used when the run passes no :class:`DirectContext`.
        retry: The retry policy the node is added with.
    """

    def __init__(
        self, model: BaseChatModel, defaults: DirectContext, retry: RetryPolicy | None = None
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry

    def style(self, context: DirectContext) -> Literal["chat", "raw"]:
        """Resolve ``context.prompt_style`` for the model (``auto`` asks the model)."""
        return prompt_style(self.model, context)  # type: ignore[arg-type]

    def body(
        self, state: ParallelSearchState, runtime: Runtime[DirectContext]
    ) -> Body[dict[str, Any]]:
        """Answer the question in one call."""
        context = run_context(runtime, self.defaults)
        question = asked_question(state)  # a missing question fails before any model use
        style = yield Blocking(self.style, (context,))  # a model card read: off the event loop
        prompt = HumanMessage(direct_prompt(question, style, context.instruction))
        options: dict[str, Any] = {"stop": ["</answer>"], "max_tokens": context.max_tokens}
        regex = constrained_regex(self.model, style, context.constrain, _ANSWER_REGEX)
        if regex:
            options["regex"] = regex
        said: list[BaseMessage] = [prompt]
        counters = dict.fromkeys(COUNTER_KEYS, 0)
        answer: str | None = None
        try:
            step = read_step((yield Invoke(self.model, [prompt], options)))
        except Exception as exc:  # reported per question; see class docstring
            reason = f"model_error: {reported_error(exc, runtime, self.retry)}"
        else:
            action = step.action
            counters.update(step.counters)
            said.append(AIMessage(content=step.text))
            if action.kind == "answer":
                answer, reason = action.answer, "answered"
            else:
                why = action.error if action.kind == "invalid" else "the reply searched instead"
                reason = f"no_answer: {why}"
        # Each run is one question: its transcript, counters and results replace a thread's
        # earlier ones, and the chat shows the question (unless it asked it) and the reply.
        return {
            "question": question,
            "transcript": extend_transcript({}, said),
            "counters": Overwrite(counters),
            "search_results": Overwrite([]),
            "answer": answer,
            "stop_reason": reason,
            "messages": [*question_message(state, question), answer_message(answer, reason)],
        }


def create_direct_graph(
    model: BaseChatModel,
    *,
    prompt_style: PromptStyleOption = "auto",
    constrain: bool | None = None,
    instruction: str | None = None,
    max_tokens: int = 64,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str = "direct",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the direct baseline: ``START -> answer -> END``, one model call, no retrieval.

    Args:
        model: Any LangChain chat model.
        prompt_style: ``auto``, ``raw`` or ``chat`` (see :class:`DirectContext`).
        constrain: Constrain the reply to one ``<answer>`` element (``None``: automatic).
        instruction: Chat-style template with a ``{question}`` placeholder.
        max_tokens: Token limit of the reply.
        retry_policy: Retries of transient model errors (``None``: none).
        checkpointer: Passed to ``compile``.
        store: Passed to ``compile``.
        name: Graph name.

    Returns:
        A compiled graph. Input ``{"messages": [...]}`` (the last human message is the
        question) or ``{"question": str}``; output ``answer``, ``stop_reason``, ``counters``,
        ``search_results`` (empty), ``messages`` (the chat: the question and the answer, every
        earlier question of the thread before them) and ``transcript`` (the prompt and the
        model's reply). Per-run overrides: ``invoke(..., context=DirectContext(...))``.

    Raises:
        UserError: ``model`` is not a chat model (``None``, a name).
    """
    check_model(model, "create_direct_graph(model)")
    defaults = DirectContext(
        prompt_style=prompt_style,
        constrain=constrain,
        instruction=instruction,
        max_tokens=max_tokens,
    )
    builder = StateGraph(
        ParallelSearchState,
        context_schema=DirectContext,
        input_schema=ParallelSearchInput,
        output_schema=ParallelSearchOutput,
    )
    node = DirectNode(model, defaults, retry=retry_policy)
    builder.add_node("answer", as_node(node, "answer"), retry_policy=retry_policy)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer, store=store, name=name)
