"""Every graph speaks chat: ``messages`` in, the chat view out, the transcript kept apart.

Scripted models and a counting searcher; the same graphs through ``langgraph dev`` and the
official client are in ``tests/integration/test_langgraph_dev.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_parallel import create_parallel_search_graph
from langgraph_parallel.agent.chat import QUERY_LIST, SEARCH_TOOL
from langgraph_parallel.apps.studio import STUDIO_GRAPHS, studio_graph
from langgraph_parallel.baselines.direct import create_direct_graph
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_muse.agent_nodes import TRAJECTORY_MESSAGE
from langgraph_parallel.parallel_search.agent_tool import parallel_search_tool
from langgraph_parallel.prompts import FEW_SHOT_RULES as FEW_SHOT
from tests.fakes import (
    CountingSearcher,
    ScriptedChatModel,
    SeededAgentModel,
    ToolCallingChatModel,
    agent_reply,
    muse_graph,
    search_call,
)
from tests.unit.test_muse import SPREADS, FakeChat, three_step_agent

QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"
SEARCH_THEN_ANSWER = [
    "<think> two people </think>\n<search> Scott Derrickson ## Ed Wood </search>",
    "<think> both American </think>\n<answer> yes </answer>",
]
TAGS = ("<think>", "<search>", "<answer>", "<information>")


def search_graph(script: list[Any] | None = None, **options: Any) -> tuple[Any, Any, Any]:
    model = ScriptedChatModel(script=script or SEARCH_THEN_ANSWER)
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(model, searcher, prompt_style="raw", **options)
    return graph, model, searcher


def shapes(messages: list[Any]) -> list[str]:
    """Each chat message as ``human``, ``search(<queries>)``, ``tool``, or ``ai:<text>``."""
    out = []
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            queries = [q for call in m.tool_calls for q in call["args"][QUERY_LIST]]
            out.append(f"search({', '.join(queries)})")
        elif isinstance(m, AIMessage):
            out.append(f"ai:{m.content}")
        else:
            out.append(m.type)
    return out


def assert_chat_view(messages: list[Any], question: str = QUESTION) -> None:
    """The chat's shapes: the question, tool calls answered by their tool messages, plain AI."""
    assert isinstance(messages[0], HumanMessage) and messages[0].content == question
    calls = {}
    for m in messages:
        if isinstance(m, AIMessage):
            assert not any(tag in str(m.content) for tag in TAGS), m.content
            for call in m.tool_calls:
                assert call["name"] == SEARCH_TOOL and set(call["args"]) == {QUERY_LIST}
                calls[call["id"]] = call
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in calls and m.name == SEARCH_TOOL
            assert m.artifact["queries"] == calls[m.tool_call_id]["args"][QUERY_LIST]
    assert isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls


@pytest.mark.parametrize(
    "given",
    [
        {"messages": [{"role": "user", "content": QUESTION}]},
        {"messages": [HumanMessage(QUESTION)]},
        {"question": QUESTION},
    ],
    ids=["message-dicts", "messages", "question"],
)
def test_parallel_search_takes_messages_or_a_question_and_shows_a_chat(given: Any) -> None:
    graph, model, searcher = search_graph()
    out = graph.invoke(given)
    assert out["answer"] == "yes" and out["question"] == QUESTION
    assert searcher.batches == [["Scott Derrickson", "Ed Wood"]]
    assert shapes(out["messages"]) == [
        "human",
        "search(Scott Derrickson, Ed Wood)",
        "tool",
        "tool",
        "ai:yes",
    ]
    assert_chat_view(out["messages"])
    step = out["messages"][1]
    assert step.content == "two people"  # the step's think, without its tags
    # One call per sub-query (LangChain's parallel tool calls), each answered by its own result.
    assert [c["args"][QUERY_LIST] for c in step.tool_calls] == [["Scott Derrickson"], ["Ed Wood"]]
    results = out["messages"][2:4]
    assert [r.tool_call_id for r in results] == [c["id"] for c in step.tool_calls]
    assert [r.artifact["branch"] for r in results] == ["1.0", "1.1"]
    assert [r.artifact["titles"] for r in results] == [
        [["Title Scott Derrickson"]],
        [["Title Ed Wood"]],
    ]
    assert "Title: Title Ed Wood" in results[1].content and "Ed Wood" not in results[0].content
    assert all(r.status == "success" for r in results)
    # The model's own transcript: the few-shot prompt, its tagged steps, the observation.
    transcript = out["transcript"]
    assert transcript[0].content.startswith(FEW_SHOT) and QUESTION in transcript[0].content
    assert [m.type for m in transcript] == ["human", "ai", "human", "ai"]
    assert transcript[1].content == SEARCH_THEN_ANSWER[0]
    assert all(r.content in transcript[2].content for r in results)
    # What the model was sent: the transcript, never the chat.
    assert [m.content for m in model.calls[1]] == [m.content for m in transcript[:3]]


def test_the_chat_tool_call_is_the_create_agent_tools_call() -> None:
    tool = parallel_search_tool(CountingSearcher())
    assert tool.name == SEARCH_TOOL
    assert list(tool.tool_call_schema["properties"]) == [QUERY_LIST]  # type: ignore[index]


def test_the_sequential_baseline_shows_one_query_a_step() -> None:
    graph, _, searcher = search_graph(decompose=False)
    out = graph.invoke({"messages": [HumanMessage(QUESTION)]})
    assert searcher.batches == [["Scott Derrickson ## Ed Wood"]]
    assert shapes(out["messages"]) == [
        "human",
        "search(Scott Derrickson ## Ed Wood)",
        "tool",
        "ai:yes",
    ]
    assert_chat_view(out["messages"])


def test_a_run_without_an_answer_says_why_in_the_chat() -> None:
    graph, _, _ = search_graph(["not an action"] * 3, max_turns=2)
    out = graph.invoke({"question": QUESTION})
    assert out["answer"] is None
    assert shapes(out["messages"]) == ["human", f"ai:No answer ({out['stop_reason']})."]
    # Invalid steps stay in the transcript: the model reads the invalid-action note.
    assert [m.type for m in out["transcript"]] == ["human", "ai", "human", "ai"]


def test_the_stream_in_messages_mode_carries_the_chat_only() -> None:
    """What Agent Chat UI receives (``messages-tuple``): no prompt, no tags, no token chunks."""
    graph, _, _ = search_graph()
    streamed = list(graph.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"))
    sent = [message for message, _ in streamed]
    assert shapes(sent) == ["search(Scott Derrickson, Ed Wood)", "tool", "tool", "ai:yes"]
    assert all(FEW_SHOT[:40] not in str(m.content) for m in sent)
    # Each sub-query's result comes from its own branch, as that branch finishes.
    nodes = [meta["langgraph_node"] for _, meta in streamed]
    assert nodes == ["think", "search", "search", "answer"]


def test_a_second_question_on_a_thread_starts_afresh_and_keeps_the_chat() -> None:
    script = [*SEARCH_THEN_ANSWER, "<think> again </think>\n<answer> no </answer>"]
    graph, model, _ = search_graph(script, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "chat"}}
    first = graph.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    second = graph.invoke({"messages": [HumanMessage("Is Ed Wood a director?")]}, config)
    assert second["question"] == "Is Ed Wood a director?" and second["answer"] == "no"
    assert shapes(second["messages"]) == [
        *shapes(first["messages"]),
        "human",
        "ai:no",
    ]
    # The question's own state starts again: a fresh transcript, steps and counters.
    assert [m.type for m in second["transcript"]] == ["human", "ai"]
    assert "Is Ed Wood a director?" in second["transcript"][0].content
    assert second["counters"]["llm_calls"] == 1 and "turns" not in second["counters"]
    assert second["search_results"] == []
    assert len(model.calls[2]) == 1  # the model read the new prompt alone
    assert graph.get_state(config).values["steps"] == 1
    # A question as `question` on the same thread asks again too.
    model.script.append("<answer> maybe </answer>")
    third = graph.invoke({"question": "A third?"}, config)
    assert shapes(third["messages"])[-2:] == ["human", "ai:maybe"]
    assert third["messages"][-2].content == "A third?"


BAD_INPUTS = [
    {},
    {"question": ""},
    {"question": "   "},
    {"question": None},
    {"messages": []},
    {"messages": [{"role": "user", "content": "  "}]},
    {"messages": [{"role": "assistant", "content": "hello"}]},
]


@pytest.mark.parametrize("given", BAD_INPUTS, ids=[str(b) for b in BAD_INPUTS])
@pytest.mark.parametrize("kind", ["parallel_search", "sequential", "direct", "muse"])
def test_a_missing_or_empty_question_is_refused_with_the_fix(kind: str, given: Any) -> None:
    model = ScriptedChatModel(script=["<answer> x </answer>"])
    if kind == "direct":
        graph = create_direct_graph(model)
    elif kind == "muse":
        graph = muse_graph(model, CountingSearcher(), budget=2)
    else:
        graph = create_parallel_search_graph(
            model, CountingSearcher(), decompose=kind == "parallel_search"
        )
    with pytest.raises(UserError, match="question|messages"):
        graph.invoke(given)
    assert model.calls == []  # refused before any model call


def test_direct_takes_messages_and_shows_question_and_answer() -> None:
    model = ScriptedChatModel(script=["<answer> yes </answer>", "<answer> no </answer>"])
    graph = create_direct_graph(model, prompt_style="raw", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "d"}}
    out = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config)
    assert out["answer"] == "yes" and shapes(out["messages"]) == ["human", "ai:yes"]
    assert [m.type for m in out["transcript"]] == ["human", "ai"]
    again = graph.invoke({"question": "Another?"}, config)
    assert shapes(again["messages"]) == ["human", "ai:yes", "human", "ai:no"]
    assert again["counters"]["llm_calls"] == 1 and len(again["transcript"]) == 2


def test_parallel_muse_shows_the_chosen_trajectory_as_a_chat() -> None:
    model = FakeChat(agent=three_step_agent(SPREADS))
    graph = muse_graph(model, CountingSearcher(), budget=3, min_branch_step=0)
    streamed = list(
        graph.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode=["messages", "values"])
    )
    out = [data for mode, data in streamed if mode == "values"][-1]
    assert out["answer"] == "x" and len(out["trajectories"]) == 3
    # Each trajectory as it finished, then the chosen one's steps and its answer.
    shown = [m for m in out["messages"] if m.name == TRAJECTORY_MESSAGE]
    chat = [m for m in out["messages"] if m.name != TRAJECTORY_MESSAGE]
    assert shapes(chat) == ["human", "search(q0)", "tool", "search(q1)", "tool", "ai:x"]
    assert_chat_view(chat)
    fields = [m.response_metadata["trajectory"] for m in shown]
    by_id = {t["id"]: t for t in out["trajectories"]}
    assert sorted(f["id"] for f in fields) == sorted(by_id)
    for f in fields:
        t = by_id[f["id"]]
        assert (f["parent"], f["branch_step"], f["answer"]) == (
            t["parent"],
            t["branch_step"],
            t["answer"],
        )
    assert any(f["parent"] is not None for f in fields)  # a fork, and it says where from
    fork = next(m for m in shown if m.response_metadata["trajectory"]["parent"] is not None)
    assert "forked from t0 at step" in fork.content and "answers 'x'" in fork.content
    # They reach a chat client live: the messages stream carries them from the rollout node.
    pairs = [data for mode, data in streamed if mode == "messages"]
    live = [meta["langgraph_node"] for m, meta in pairs if m.name == TRAJECTORY_MESSAGE]
    assert live == ["rollout"] * 3
    chosen = next(t for t in out["trajectories"] if t["id"] == out["aggregation"]["chosen"])
    # The trajectory (what reports and forks read) is still the model's transcript.
    opening = chosen["messages"][0]["content"]
    assert QUESTION in opening and "<answer>" in opening  # the loop's prompt, with its rules
    assert "<answer> x </answer>" in chosen["messages"][-1]["content"]
    sent = [data[0] for mode, data in streamed if mode == "messages"]
    assert all(not any(tag in str(m.content) for tag in ("<think>", "<answer>")) for m in sent)
    assert all(FEW_SHOT[:40] not in str(m.content) for m in sent)


def test_parallel_muse_asks_a_second_question_on_its_thread() -> None:
    model = FakeChat(agent=three_step_agent(SPREADS))
    graph = muse_graph(model, CountingSearcher(), budget=3, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "m"}}
    first = graph.invoke({"question": QUESTION}, config)
    second = graph.invoke({"messages": [HumanMessage("Again?")]}, config)
    assert second["question"] == "Again?" and second["answer"] == "x"
    assert len(second["trajectories"]) == 3 and len(second["branch_points"]) <= 2
    assert second["counters"]["llm_calls"] == first["counters"]["llm_calls"]
    n = len(first["messages"])
    assert shapes(second["messages"][:n]) == shapes(first["messages"])
    assert shapes(second["messages"][n:])[0] == "human"
    assert second["messages"][n].content == "Again?"
    assert_chat_view([m for m in second["messages"][n:] if m.name != TRAJECTORY_MESSAGE], "Again?")


def test_every_studio_graph_takes_messages() -> None:
    """Each id of langgraph.json, with scripted models: a chat in, a chat view out."""

    def reply(seed: object, step: int) -> object:
        if step == 0:
            return agent_reply("look", queries=["a", "b"], spread={"exploration": 4})
        return agent_reply("so", answer="done", spread={"answer": 2})

    for graph_id in STUDIO_GRAPHS:
        if graph_id == "parallel_search_agent":
            model: Any = ToolCallingChatModel(
                script=[search_call({QUERY_LIST: ["a", "b"]}), "done"]
            )
        elif graph_id == "parallel_muse_agent":
            model = SeededAgentModel(reply=reply)
        elif graph_id == "parallel_muse":
            model = FakeChat(agent=three_step_agent(SPREADS))
        else:
            model = ScriptedChatModel(script=SEARCH_THEN_ANSWER)
        graph = studio_graph(graph_id, model=model, search=CountingSearcher())
        context = {"budget": 2, "min_branch_step": 0} if "muse" in graph_id else {}
        out = graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=context)
        assert out["answer" if "agent" not in graph_id or "muse" in graph_id else "counters"]
        chat = out["messages"]
        assert isinstance(chat[0], HumanMessage) and chat[0].content == QUESTION, graph_id
        assert any(m.tool_calls for m in chat if isinstance(m, AIMessage)), graph_id
        assert isinstance(chat[-1], AIMessage) and not chat[-1].tool_calls, graph_id
        assert not any(tag in str(chat[-1].content) for tag in TAGS), graph_id


def test_calls_with_no_branch_are_answered_by_fan_out_repeats_and_over_the_cap() -> None:
    """Every call of a step gets its result: a repeat and a sub-query over the cap too."""
    script = [
        "<think> both </think>\n<search> Ed Wood ## Scott Derrickson </search>",
        "<think> again </think>\n<search> Ed Wood </search>",
        "<think> so </think>\n<answer> yes </answer>",
    ]
    graph, _, searcher = search_graph(script, max_parallel_queries=1)
    parts = list(graph.stream({"question": QUESTION}, stream_mode=["messages", "values"]))
    streamed = [data for mode, data in parts if mode == "messages"]
    chat = [data for mode, data in parts if mode == "values"][-1]["messages"]
    assert searcher.batches == [["Ed Wood"]]  # the repeat and the one over the cap: no search
    assert shapes(chat) == [
        "human",
        "search(Ed Wood, Scott Derrickson)",
        "tool",
        "tool",
        "search(Ed Wood)",
        "tool",
        "ai:yes",
    ]
    assert_chat_view(chat)
    # In the order they came: fan_out's answer to the call over the cap, then the branch's.
    over, first, repeat = chat[2], chat[3], chat[5]
    assert first.artifact["branch"] == "1.0" and "Title: Title Ed Wood" in first.content
    assert over.artifact["branch"] == "1.1" and over.content.startswith("Not searched: over")
    assert repeat.artifact["branch"] == "2.0" and "already" in repeat.content.lower()
    # Who wrote them, live: the branch its own result, fan_out the two it answered itself.
    nodes = [meta["langgraph_node"] for m, meta in streamed if m.type == "tool"]
    assert nodes == ["fan_out", "search", "fan_out"]


def test_tool_searches_counts_a_step_once_across_questions_on_a_thread() -> None:
    """Each step's per-sub-query results are one turn; the next question's step is the next."""
    from langgraph_parallel.agent.searches import tool_searches

    script = [*SEARCH_THEN_ANSWER, *SEARCH_THEN_ANSWER]
    graph, _, _ = search_graph(script, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "two"}}
    graph.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    out = graph.invoke({"messages": [HumanMessage("Again?")]}, config)
    found = tool_searches(out["messages"])
    assert [(s["turn"], s["query"]) for s in found] == [
        (1, "Scott Derrickson"),
        (1, "Ed Wood"),
        (2, "Scott Derrickson"),
        (2, "Ed Wood"),
    ]
