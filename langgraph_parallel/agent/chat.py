"""The chat view of a run: the conversation a chat UI shows, apart from the model's transcript.

A run of the loop keeps two conversations in its state:

- ``transcript`` is the model's own: for our policies a raw few-shot prompt, each step's text
  with its tags, each ``<information>`` observation. The loop prompts the model with it, the
  engine's prefix cache serves its repeated prefixes, and ParallelMuse forks it; it is only ever
  appended to, byte for byte.
- ``messages`` is what a chat UI (LangGraph Studio's chat, Agent Chat UI) shows, in LangChain's
  shapes: the user's question (``HumanMessage``); each search step an ``AIMessage`` (its think
  as the text) with one ``search`` tool call per sub-query, the sub-query as its
  ``query_list`` (LangChain's parallel tool calls); each sub-query's result as its call's
  ``ToolMessage``; the answer as a plain ``AIMessage``. The tool's name and arguments are those
  of the ``create_agent`` tool
  (:func:`~langgraph_parallel.parallel_search.agent_tool.parallel_search_tool`), and
  :func:`~.searches.tool_searches` reads either way in.

Why a call per sub-query rather than one call carrying them all: the act writes each result as
its branch finishes (:func:`branch_result`), so a chat client watching the ``messages`` stream
sees the fan-out happen, each result placed under its own call (which branch it is: the
artifact's ``branch``, ``"turn.index"``), and every provider accepts the conversation (one
result per call id).

Nodes report what a step did and this module renders it. Why the transcript is written whole
(:func:`extend_transcript`, an ``Overwrite`` of the full list) rather than appended: LangGraph's
``messages`` stream mode (Agent Chat UI's ``messages-tuple``) emits every message a node
returns under any state key, so appended transcript messages would reach the chat as if said
to the user; a value written whole is not a message list and is not emitted. The model calls
themselves are kept off that stream too (:class:`~.nodes.Invoke` tags them ``nostream``).

A thread is a chat: the last human message of ``messages`` not yet asked is a new question
(:func:`question_to_start`), and the loop then starts it afresh (transcript, steps, answer and
per-question counters reset) while ``messages`` keeps the whole chat.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Overwrite

from langgraph_parallel.errors import UserError, clean_text

__all__ = [
    "QUERY_LIST",
    "SEARCH_TOOL",
    "answer_message",
    "asked_question",
    "branch_result",
    "extend_transcript",
    "question_message",
    "question_to_start",
    "search_call",
    "search_call_ids",
]

SEARCH_TOOL = "search"
"""The name of the search tool call a search step shows (the ``create_agent`` tool's name)."""
QUERY_LIST = "query_list"
"""The argument of that call holding the step's sub-queries (the ``create_agent`` tool's)."""

_NO_QUESTION = (
    'No question to answer: {why}. Invoke the graph with {{"messages": [{{"role": '
    '"user", "content": "<your question>"}}]}} (the last user message is the question) or '
    'with {{"question": "<your question>"}}.'
)


def extend_transcript(state: Mapping[str, Any], new: Sequence[BaseMessage]) -> Overwrite:
    """Return the state's ``transcript`` with ``new`` appended, as a value written whole.

    New messages get ids as the ``add_messages`` reducer would give them (ParallelMuse finds a
    step's fork point by its message id). See the module docstring for why it is written whole.
    """
    return Overwrite([*(state.get("transcript") or []), *_with_ids(new)])


def _with_ids(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out = []
    for message in messages:
        if message.id is None:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        out.append(message)
    return out


def _pending_human(state: Mapping[str, Any]) -> str | None:
    """Return the text of the chat's last message if it is a human one, else ``None``."""
    chat = state.get("messages") or []
    last = chat[-1] if chat else None
    if isinstance(last, HumanMessage) or getattr(last, "type", None) == "human":
        return clean_text(str(last.text)).strip()  # type: ignore[union-attr]
    return None


def asked_question(state: Mapping[str, Any]) -> str:
    """Return the question the input asks: the chat's last human message, else ``question``.

    The chat's last message is the question when it is a human one.

    Raises:
        UserError: No question, an empty one (``""``, whitespace, ``None``), or ``messages``
            whose last message is not a human one; the message says what to send.
    """
    pending = _pending_human(state)
    if pending is not None:
        if not pending:
            raise UserError(_NO_QUESTION.format(why="the last user message is empty"))
        return pending
    question = state.get("question")
    if question is None:
        chat = state.get("messages") or []
        why = "the last message is not a user message" if chat else "no question and no messages"
        raise UserError(_NO_QUESTION.format(why=why))
    if not isinstance(question, str):
        raise UserError(_NO_QUESTION.format(why=f"question is a {type(question).__name__}"))
    question = clean_text(question).strip()
    if not question:
        raise UserError(_NO_QUESTION.format(why="the question is empty"))
    return question


def question_to_start(state: Mapping[str, Any]) -> str | None:
    """Return the question a step starts afresh, or ``None`` when the step goes on with one.

    A question starts when nothing was asked yet (an empty transcript), when the last one
    finished (``stop_reason`` set), or when the chat ends with a human message other than the
    question being answered (asked on the thread of a run that was interrupted).

    Raises:
        UserError: A question starts and the input asks none (:func:`asked_question`).
    """
    started = bool(state.get("transcript")) and state.get("stop_reason") is None
    if started:
        pending = _pending_human(state)
        if pending is None or pending == clean_text(str(state.get("question") or "")).strip():
            return None
    return asked_question(state)


def question_message(state: Mapping[str, Any], question: str) -> list[HumanMessage]:
    """Return the chat message of a question that starts: none when the chat asked it.

    Input ``messages`` already holds it; input ``question`` gets it as a ``HumanMessage``.
    """
    return [] if _pending_human(state) is not None else [HumanMessage(question)]


def search_call(think: str | None, queries: Sequence[str]) -> AIMessage:
    """Return a search step as the chat shows it: its think as text, a call per sub-query.

    The calls' ids share the step's stem and end with the sub-query's index
    (:func:`search_call_ids` reads them back in order).
    """
    stem = f"call_{uuid.uuid4().hex[:20]}"
    calls = [
        {
            "name": SEARCH_TOOL,
            "args": {QUERY_LIST: [query]},
            "id": f"{stem}_{i}",
            "type": "tool_call",
        }
        for i, query in enumerate(queries)
    ]
    return AIMessage(content=think or "", tool_calls=calls)


def search_call_ids(state: Mapping[str, Any]) -> list[str]:
    """Return the ids of the chat's last search step's calls, in sub-query order (or none)."""
    for message in reversed(state.get("messages") or []):
        calls = [c for c in getattr(message, "tool_calls", None) or [] if c["name"] == SEARCH_TOOL]
        if calls:
            return [str(c["id"]) for c in calls]
        if getattr(message, "type", None) == "human":
            break
    return []


def branch_result(
    call_id: str,
    query: str,
    text: str,
    titles: Sequence[str],
    *,
    turn: int,
    index: int,
    error: str | None = None,
) -> ToolMessage:
    """Return one sub-query's result as the chat shows it: the tool result of its call.

    Args:
        call_id: Its call's id (:func:`search_call_ids`).
        query: The sub-query.
        text: What the model reads of it (its documents, or why there are none).
        titles: The titles found.
        turn: The search turn.
        index: The sub-query's place in the turn.
        error: Why the search failed (the message's ``status`` is then ``"error"``).

    The artifact is the ``create_agent`` tool's ``{"queries", "titles"}`` for this one
    sub-query, with ``turn`` and ``branch`` (``"turn.index"``) saying where it belongs.
    """
    artifact = {
        "queries": [query],
        "titles": [list(titles)],
        "turn": turn,
        "branch": f"{turn}.{index}",
    }
    return ToolMessage(
        content=text.strip() or "No documents.",
        tool_call_id=call_id,
        name=SEARCH_TOOL,
        artifact=artifact,
        status="error" if error else "success",
    )


def answer_message(answer: str | None, stop_reason: str) -> AIMessage:
    """Return the run's end as the chat shows it: the answer's text, or why there is none."""
    if answer is not None:
        return AIMessage(content=answer)
    return AIMessage(content=f"No answer ({stop_reason}).")
