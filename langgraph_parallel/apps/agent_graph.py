"""``create-agent``: a ``create_agent`` app behind the question interface of ``ask`` and ``bench``.

A ``create_agent`` graph takes ``messages``; ``ask``, ``bench`` and the harness give a graph
``{"question": ...}`` and read ``answer``, ``stop_reason`` and ``counters``. This graph puts the
question in as the user's message, runs the agent as a subgraph (its ``counters``, kept by
:class:`~langgraph_parallel.parallel_search.middleware.ParallelSearchMiddleware`, flow up under
the same reducer) and reads the answer from its last message, so the ``create_agent`` path is
measured by the same harness as our graphs. Written here, not in LangGraph: it is our question
interface, a three-node adapter.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_parallel.agent.searches import tool_searches
from langgraph_parallel.agent.state import add_counters

__all__ = ["AgentQuestionState", "create_agent_question_graph"]


class AgentQuestionState(TypedDict):
    """The question interface around an agent's ``messages``."""

    question: str
    messages: Annotated[list[AnyMessage], add_messages]
    counters: NotRequired[Annotated[dict[str, int], add_counters]]
    answer: NotRequired[str | None]
    stop_reason: NotRequired[str]
    search_results: NotRequired[list[dict[str, Any]]]


def _ask(state: AgentQuestionState) -> dict[str, Any]:
    return {"messages": [HumanMessage(state["question"])]}


def _finish(state: AgentQuestionState) -> dict[str, Any]:
    last = state["messages"][-1] if state["messages"] else None
    text = last.text.strip() if isinstance(last, AIMessage) and not last.tool_calls else ""
    stop: Literal["answered", "no_answer"] = "answered" if text else "no_answer"
    return {
        "answer": text or None,
        "stop_reason": stop,
        "search_results": tool_searches(state["messages"]),
    }


def create_agent_question_graph(agent: Any, *, name: str | None = None) -> Any:
    """Wrap a compiled ``create_agent`` graph so it takes a ``question`` and gives an ``answer``.

    Args:
        agent: A compiled agent graph whose state has ``messages`` (and, with
            ``ParallelSearchMiddleware``, ``counters``).
        name: The compiled graph's name.

    Returns:
        A compiled graph: ``{"question": str}`` in; ``answer``, ``stop_reason``, ``counters``,
        ``search_results`` and the agent's ``messages`` out.
    """
    builder = StateGraph(AgentQuestionState)
    builder.add_node("ask", _ask)
    builder.add_node("agent", agent)
    builder.add_node("finish", _finish)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "agent")
    builder.add_edge("agent", "finish")
    builder.add_edge("finish", END)
    return builder.compile(name=name or "create_agent")
