"""The step loop's state schemas and their reducers, knowing neither paper.

Every key that parallel ``Send`` branches write has a deterministic reducer, so the joined state
does not depend on which branch finished first. An act adds its own keys to :class:`LoopState`
(ParallelSearch's fan-out state is its own package's).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

TRANSCRIPT_KEY = "transcript"
"""The state key of the model's transcript; ``messages`` is the chat (:mod:`~.chat`)."""

COUNTER_KEYS = (
    "llm_calls",
    "turns",
    "sub_queries",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
)
"""The per-question counters every benchmark reports (see ARCHITECTURE.md section 4)."""


def add_counters(left: Mapping[str, int] | None, right: Mapping[str, int] | None) -> dict[str, int]:
    """Sum two counter dicts key by key (missing keys count as zero)."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        out[key] = out.get(key, 0) + int(value)
    return out


class LoopInput(TypedDict, total=False):
    """Input of the loop's graphs (ParallelSearch, its sequential baseline, ``direct``).

    Either ``messages``, a chat whose last (human) message is the question, as LangGraph
    Studio's chat and Agent Chat UI send it, or ``question`` alone. On a thread that already ran
    a question, a new human message (or question) asks a new one there
    (:mod:`~langgraph_parallel.agent.chat`).
    """

    question: str
    messages: Annotated[list[AnyMessage], add_messages]


class LoopOutput(TypedDict):
    """Final state a caller reads: the answer (or ``None``) with the reason the run stopped.

    ``counters`` holds the :data:`COUNTER_KEYS` and graph-specific ones: ``invalid_steps``,
    ``truncated_steps``, ``final_answer_steps`` (1 when the final answer-only step ran),
    ``trimmed_steps`` (1 when a full context made the run answer over a trimmed transcript),
    ``context_refusals`` (1 when the model refused a prompt as too long, a model that declares
    no window; see :class:`~langgraph_parallel.agent.think.ThinkNode`) and those its act adds.
    ``messages`` is the chat (the question, each search step as a ``search`` tool call and its
    result, the answer) and ``transcript`` what the model read and wrote
    (:mod:`~langgraph_parallel.agent.chat`). An act's output adds its own keys.
    """

    question: str
    answer: str | None
    stop_reason: str
    counters: dict[str, int]
    messages: list[AnyMessage]
    transcript: list[AnyMessage]


class LoopState(TypedDict):
    """State keys of the step loop; an act's state adds its own (the act declares it).

    Attributes:
        question: The question being answered (the input's, or the chat's last human message).
        messages: The chat: every question asked on the thread and, for each, its search steps
            as ``search`` tool calls with their results, and the answer
            (:mod:`~langgraph_parallel.agent.chat`).
        transcript: The model's transcript of the current question: prompt, model steps,
            observations, byte-stable (the prefix cache and ParallelMuse's forks read it).
        queries: The queries of the search step ``think`` chose, which the act reads.
        answer: Final answer, ``None`` until the model answers.
        stop_reason: Why the run ended (``answered``, ``max_turns: ...``,
            ``recursion_limit: ...``, ``context_full: ...``, ``model_error: ...``); ``None``
            while a question runs.
        steps: Model calls made so far (at most ``max_turns``, plus the final answer-only
            step).
        counters: Summed counters (see :data:`COUNTER_KEYS`).
        remaining_steps: Super-steps left under the run's ``recursion_limit`` (managed by
            LangGraph, never written), so ``think`` can stop with a reason before the limit
            would raise.
    """

    question: NotRequired[str]
    messages: Annotated[list[AnyMessage], add_messages]
    transcript: NotRequired[Annotated[list[AnyMessage], add_messages]]
    queries: list[str]
    answer: NotRequired[str | None]
    stop_reason: NotRequired[str | None]
    steps: NotRequired[Annotated[int, operator.add]]
    counters: NotRequired[Annotated[dict[str, int], add_counters]]
    remaining_steps: NotRequired[RemainingSteps]


def require_state_keys(builder: Any, keys: Mapping[str, str], part: str) -> None:
    """Fail when a user's graph ``builder`` lacks state keys that ``part`` reads or writes.

    A subgraph node only sees and returns the parent's keys it shares, so a missing key would
    make the part do nothing, silently. Checked when the part is added, not mid-run.

    Args:
        builder: The user's ``StateGraph``.
        keys: Key -> the type it should have (quoted in the error).
        part: What is being added (quoted in the error).

    Raises:
        ValueError: With the missing keys and their types.
    """
    channels = getattr(builder, "channels", {})
    missing = [f"{key}: {kind}" for key, kind in keys.items() if key not in channels]
    if missing:
        raise ValueError(
            f"{part} needs these keys in the graph's state schema: {'; '.join(missing)}. "
            "Add them to the state TypedDict the StateGraph was built with."
        )
