"""ParallelMuse over any checkpointed agent: forks through the checkpointer, with fake models.

The agents' models (``tests.fakes.SeededAgentModel``) reply as a function of the run's seed and
the step, with scripted token logprobs (a flat top-m distribution scores exactly m), so the
concurrent branches of a run are deterministic and each step's uncertainty is set by the test.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from typing_extensions import TypedDict

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.agent.run import run_question
from langgraph_parallel.apps.registry import GRAPH_NAMES, build_graph
from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.muse import muse_fields
from langgraph_parallel.eval.recall import run_searches
from langgraph_parallel.parallel_muse.tree import mermaid_tree
from langgraph_parallel.parallel_muse.uncertainty import select_branch_points
from tests.fakes import CountingSearcher, SeededAgentModel, agent_reply, muse_agent

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"


def three_steps(seed: Any, step: int) -> AIMessage:
    """Search, search again (the most uncertain call), answer: ``yes`` unless the seed is 2."""
    if step == 0:
        return agent_reply("both", queries=["a", "b"], spread={"exploration": 2})
    if step == 1:
        return agent_reply("then", queries=["c"], spread={"exploration": 6}, call_id="call_2")
    return agent_reply("so", answer="no" if seed == 2 else "yes", spread={"answer": 3})


def search_agent(model: SeededAgentModel, **options: Any) -> Any:
    tool = parallel_search_tool(CountingSearcher())
    return create_agent(
        model,
        tools=[tool],
        middleware=[ParallelSearchMiddleware()],
        checkpointer=InMemorySaver(),
        **options,
    )


def ask(graph: Any, **config: Any) -> dict[str, Any]:
    return graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config or None)


def split_chat(messages: list[Any]) -> tuple[list[Any], list[Any]]:
    """The trajectory messages ParallelMuse showed, and the rest of the chat."""
    from langgraph_parallel.parallel_muse.agent_nodes import TRAJECTORY_MESSAGE

    shown = [m for m in messages if m.name == TRAJECTORY_MESSAGE]
    return shown, [m for m in messages if m.name != TRAJECTORY_MESSAGE]


def thread_messages(agent: Any, thread_id: str) -> list[Any]:
    return agent.get_state({"configurable": {"thread_id": thread_id}}).values["messages"]


def test_a_create_agent_app_is_forked_at_its_most_uncertain_step_into_new_threads() -> None:
    model = SeededAgentModel(reply=three_steps)
    agent = search_agent(model)
    out = ask(muse_agent(agent, budget=4, top_k_steps=1, samples_per_step=3))

    first, *forks = out["trajectories"]
    assert [t["id"] for t in out["trajectories"]] == ["t0", "t1", "t2", "t3"]
    # The point the uncertainty ranks first: t0's second search (its tokens' top-6 spread).
    assert out["branch_points"] == select_branch_points([first], "exploration", "ppl", 1)
    assert out["branch_points"][0]["step"] == 1
    parent = thread_messages(agent, first["thread_id"])
    assert [m.type for m in parent] == ["human", "ai", "tool", "ai", "tool", "ai"]
    threads = {first["thread_id"]}
    for fork in forks:
        assert (fork["parent"], fork["branch_step"], fork["messages_prefix_len"]) == ("t0", 1, 3)
        assert fork["thread_id"] not in threads  # a thread of its own
        threads.add(fork["thread_id"])
        messages = thread_messages(agent, fork["thread_id"])
        # The messages before the fork, ids and all: the model is prompted exactly as before.
        assert messages[:3] == parent[:3]
        assert [m.type for m in messages[3:]] == ["ai", "tool", "ai"]
        # Counted once: the fork's own two calls and its one search, not the inherited ones.
        assert fork["counters"]["llm_calls"] == 2 and fork["counters"]["turns"] == 1
        assert [s["origin"] for s in fork["steps"]] == ["t0", fork["id"], fork["id"]]
        assert run_searches({"trajectories": [fork]})[0]["turn"] == 2  # numbered after t0's
    # The caller's thread ends where its run did.
    assert thread_messages(agent, first["thread_id"]) == parent
    # Every call sampled, each trajectory with its own seed (t0's three, three per fork).
    seeds = sorted(call["seed"] for call in model.calls)
    assert seeds == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert {call["temperature"] for call in model.calls} == {0.6}
    # t2 answered "no": the others outvote it; the output holds the chosen conversation.
    assert out["aggregation"]["votes"] == {"yes": 3.0, "no": 1.0}
    assert out["answer"] == "yes" and out["stop_reason"] == "answered"
    # (after each trajectory as the chat saw it finish)
    shown, said = split_chat(out["messages"])
    assert [m.response_metadata["trajectory"]["id"] for m in shown] == ["t0", "t1", "t2", "t3"]
    assert said == parent and out["counters"]["llm_calls"] == 3 + 2 * 3


def test_branch_temperature_samples_the_forks_only_at_it() -> None:
    model = SeededAgentModel(reply=three_steps)
    options = {"budget": 3, "top_k_steps": 1, "samples_per_step": 2}
    ask(muse_agent(search_agent(model), branch_temperature=1.0, **options))
    by_seed = {(call["seed"], call["temperature"]) for call in model.calls}
    # t0 (seed 0) at the run's temperature; its forks t1 and t2 at the branch temperature.
    assert by_seed == {(0, 0.6), (1, 1.0), (2, 1.0)}
    with pytest.raises(ValueError, match="branch_temperature must be 0 or more"):
        muse_agent(search_agent(model), branch_temperature=-0.5)


def test_a_graph_that_is_not_ours_is_forked_from_its_own_checkpoints() -> None:
    def reply(seed: Any, step: int) -> AIMessage:
        uncertain = {"reasoning": 5} if step == 1 else {"reasoning": 2}
        calls = [{"name": "lookup", "args": {"key": str(step)}, "id": f"k{step}"}]
        text = f"step {step} of seed {seed}"
        message = agent_reply(text, answer=text, spread=uncertain)
        return message.model_copy(update={"tool_calls": calls if step < 2 else []})

    model = SeededAgentModel(reply=reply)

    def llm(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def lookup(state: MessagesState) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
        return {"messages": [ToolMessage(f"value {call['args']['key']}", tool_call_id=call["id"])]}

    def route(state: MessagesState) -> str:
        return "lookup" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]

    builder = StateGraph(MessagesState)
    builder.add_node("llm", llm)
    builder.add_node("lookup", lookup)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route, ["lookup", END])
    builder.add_edge("lookup", "llm")
    agent = builder.compile(checkpointer=InMemorySaver())

    muse = muse_agent(agent, budget=3, top_k_steps=1, region="reasoning")
    out = muse.invoke({"question": "Look it up?"})

    first, *forks = out["trajectories"]
    assert [s["action"] for s in first["steps"]] == ["tool", "tool", "answer"]
    assert [(s.get("fork") or {}).get("as_node") for s in first["steps"]] == [
        "__start__",
        "lookup",
        "lookup",
    ]
    assert out["branch_points"][0]["step"] == 1  # the most uncertain reasoning
    assert len(forks) == 2 and {f["branch_step"] for f in forks} == {1}
    for fork in forks:
        messages = thread_messages(agent, fork["thread_id"])
        assert messages[:3] == thread_messages(agent, first["thread_id"])[:3]
        assert messages[-1].content == f"step 2 of seed {fork['index']}"
    assert out["answer"] == "step 2 of seed 0"  # no majority: the first answer reached wins
    assert out["aggregation"]["join"] == "majority"
    tree = mermaid_tree(out)
    assert "t0 step 1: tool" in tree and "lookup" in tree and "branch point" in tree


@pytest.mark.parametrize(
    ("budget", "top_k_steps", "samples", "forks"),
    [(3, 2, 3, [1, 1]), (5, 2, 2, [1, 1, 0, 0]), (2, 1, 3, [1])],
)
def test_the_budget_counts_every_trajectory_the_first_included(
    budget: int, top_k_steps: int, samples: int, forks: list[int]
) -> None:
    model = SeededAgentModel(reply=three_steps)
    muse = muse_agent(
        search_agent(model),
        budget=budget,
        top_k_steps=top_k_steps,
        samples_per_step=samples,
        min_branch_step=0,  # the paper's any step: (5, 2, 2) forks step 0 too
    )
    out = ask(muse)
    assert len(out["trajectories"]) == budget
    assert [t["branch_step"] for t in out["trajectories"][1:]] == forks
    assert len(model.calls) == 3 + 2 * forks.count(1) + 3 * forks.count(0)


def test_a_finished_thread_is_forked_without_running_it_again() -> None:
    model = SeededAgentModel(reply=three_steps)
    agent = search_agent(model)
    mine = {"configurable": {"thread_id": "mine"}}
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, mine)
    before = thread_messages(agent, "mine")
    calls = len(model.calls)

    out = muse_agent(agent, budget=2, top_k_steps=1).invoke({"from_thread": "mine"})

    first, fork = out["trajectories"]
    assert first["thread_id"] == "mine" and first["answer"] == "yes"
    assert fork["thread_id"].startswith("mine-muse-") and fork["parent"] == "t0"
    assert len(model.calls) == calls + 2  # only the fork's two calls
    assert thread_messages(agent, "mine") == before
    assert out["question"] == QUESTION


def test_keep_threads_false_deletes_the_runs_threads_but_not_the_callers() -> None:
    agent = search_agent(SeededAgentModel(reply=three_steps))
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "mine"}})
    muse = muse_agent(agent, budget=3, top_k_steps=1, keep_threads=False)
    out = muse.invoke({"from_thread": "mine"})
    assert out["messages"][-1].content == "yes"  # read before the threads went
    assert thread_messages(agent, "mine")  # the caller's thread is kept
    for fork in out["trajectories"][1:]:
        state = agent.get_state({"configurable": {"thread_id": fork["thread_id"]}})
        assert state.values == {}


def test_a_failing_branch_ends_alone_and_a_transient_one_resumes_its_thread() -> None:
    failed: set[int] = set()

    def reply(seed: Any, step: int) -> Any:
        if seed == 1 and step == 2 and seed not in failed:
            failed.add(seed)
            return ConnectionError("dropped once")  # retried: goes on from its checkpoint
        if seed == 2 and step == 2:
            return RuntimeError("engine died")  # not transient: this branch ends here
        return three_steps(seed, step)

    model = SeededAgentModel(reply=reply)
    out = ask(muse_agent(search_agent(model), budget=4, top_k_steps=1))

    by_id = {t["id"]: t for t in out["trajectories"]}
    assert by_id["t2"]["stop_reason"] == "agent_error: RuntimeError: engine died"
    assert by_id["t2"]["answer"] is None and by_id["t2"]["counters"]["llm_calls"] == 1
    assert all(by_id[t]["stop_reason"] == "answered" for t in ("t0", "t1", "t3"))
    # t1's retry asked only for the step that failed, not for its earlier one again.
    assert sorted(c["seed"] for c in model.calls).count(1) == 3
    assert out["aggregation"]["excluded"] == ["t2"] and out["answer"] == "yes"


def test_an_agent_without_a_checkpointer_forks_through_the_wrappers_or_one_of_its_own() -> None:
    from langgraph_parallel.parallel_muse.agent_thread import forkable

    tool = parallel_search_tool(CountingSearcher())
    model = SeededAgentModel(reply=three_steps)
    agent = create_agent(model, tools=[tool], middleware=[ParallelSearchMiddleware()])
    # Built without one (as LangGraph Server wants the graphs it serves): the wrapper's.
    saver = InMemorySaver()
    muse = muse_agent(agent, budget=2, top_k_steps=1, checkpointer=saver)
    out = ask(muse, configurable={"thread_id": "muse"})
    first, fork = out["trajectories"]
    assert fork["parent"] == first["id"] and out["answer"] == "yes"
    # The agent's threads live in the wrapper's checkpointer, beside the wrapper's own.
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert {"muse", first["thread_id"], fork["thread_id"]} <= threads
    assert agent.checkpointer is None  # the caller's agent is not changed
    # Neither has one: forked through one of the wrapper's own, its threads gone once joined.
    out = ask(muse_agent(agent, budget=2, top_k_steps=1))
    first, fork = out["trajectories"]
    assert fork["parent"] == first["id"] and out["answer"] == "yes"
    with pytest.raises(UserError, match=r"checkpointer=InMemorySaver\(\)"):
        forkable(agent)  # the rule the wrapper applies when it is built
    assert forkable(agent, saver).checkpointer is saver


def test_a_state_without_messages_is_refused_with_the_fix() -> None:
    class Question(TypedDict):
        question: str

    builder = StateGraph(Question)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    with pytest.raises(UserError, match="`messages`"):
        muse_agent(builder.compile(checkpointer=InMemorySaver()))


def test_a_model_without_logprobs_gets_fresh_runs_as_in_the_graph() -> None:
    def plain(seed: Any, step: int) -> AIMessage:
        return agent_reply("so", answer="yes", logprobs=False)

    model = SeededAgentModel(reply=plain)
    out = ask(muse_agent(search_agent(model), budget=3))
    # Nothing to rank a step by: no fork, the budget spent on independent runs, as the graph.
    assert out["branch_points"] == []
    assert [t["parent"] for t in out["trajectories"]] == [None, None, None]
    assert out["answer"] == "yes"


def test_the_agent_bounds_its_own_steps_and_select_without_an_analyst_is_refused() -> None:
    agent = search_agent(SeededAgentModel(reply=three_steps))
    # The loop's own fields are not read over an agent: its three steps all run.
    out = ask(muse_agent(agent, budget=1, max_turns=1))
    assert len(out["trajectories"][0]["steps"]) == 3 and out["answer"] == "yes"
    with pytest.raises(ValueError, match="needs an analyst"):
        muse_agent(agent, join="select")
    with pytest.raises(UserError, match="messages, a question, or from_thread"):
        muse_agent(agent).invoke({})


def test_it_runs_under_ainvoke_too() -> None:
    model = SeededAgentModel(reply=three_steps)
    muse = muse_agent(search_agent(model), budget=3, top_k_steps=1)
    question = {"messages": [{"role": "user", "content": QUESTION}]}
    out = asyncio.run(muse.ainvoke(question))
    assert len(out["trajectories"]) == 3 and out["answer"] == "yes"


def test_the_registry_graph_answers_questions_with_the_harness_fields() -> None:
    assert "parallel-muse-agent" in GRAPH_NAMES
    model = SeededAgentModel(reply=three_steps)
    searcher = CountingSearcher()
    graph = build_graph(
        "parallel-muse-agent", model, searcher, max_turns=4, top_k=3, budget=3, top_k_steps=1
    )
    run = run_question(graph, QUESTION)
    assert run.answer == "yes" and run.stop_reason == "answered"
    assert run.counters["llm_calls"] == 3 + 2 * 2 and run.counters["turns"] == 2 + 2
    fields = muse_fields(run.state, ["yes"])
    assert fields["trajectories"] == 3 and fields["forks"] == 2
    assert fields["em_join_graph"] == fields["em_join_majority"] == 1.0
    assert fields["agent_cached_prefill"] == 60 * 7 and "branch point" in fields["tree"]
    assert [r["query"] for r in run_searches(run.state)][:3] == ["a", "b", "c"]
    # t2 answered "no": the analyst (join "select", the model given) was asked; this fake
    # writes no <choice>, so the vote decided.
    assert (
        run.state["aggregation"]["join"] == "select" and run.extra_counters["aggregate_calls"] == 1
    )
    assert run.state["aggregation"]["method"] == "majority"


def test_under_ainvoke_an_agent_with_async_only_tools_runs_its_async_path() -> None:
    from langchain_core.tools import StructuredTool

    searched: list[list[str]] = []

    async def search(query_list: list[str]) -> str:
        searched.append(query_list)
        return "Doc 1(Title: A) found."

    # Like an MCP adapter's tools: a coroutine and no sync function (invoke raises).
    tool = StructuredTool.from_function(coroutine=search, name="search", description="Search.")
    model = SeededAgentModel(reply=three_steps)
    agent = create_agent(model, tools=[tool], checkpointer=InMemorySaver())
    muse = muse_agent(agent, budget=3, top_k_steps=1)
    question = {"messages": [{"role": "user", "content": QUESTION}]}
    out = asyncio.run(muse.ainvoke(question))
    assert len(out["trajectories"]) == 3 and out["answer"] == "yes"
    assert all(t["stop_reason"] == "answered" for t in out["trajectories"])
    assert searched  # the tool ran, awaited


def test_the_trajectories_shown_in_the_chat_are_not_passed_to_the_agent() -> None:
    """A next question on the thread: the agent reads the chat, not the trajectory messages."""
    from langgraph_parallel.parallel_muse.agent_nodes import TRAJECTORY_MESSAGE

    model = SeededAgentModel(reply=three_steps)
    agent = search_agent(model)
    graph = muse_agent(agent, budget=2, top_k_steps=1, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "chat"}}
    first = ask(graph, **config)
    shown = [m for m in first["messages"] if m.name == TRAJECTORY_MESSAGE]
    assert [m.response_metadata["trajectory"]["id"] for m in shown] == ["t0", "t1"]
    second = graph.invoke({"messages": [HumanMessage("And again?")]}, config)
    assert len(second["trajectories"]) == 2
    fresh = thread_messages(agent, second["trajectories"][0]["thread_id"])
    said = fresh[: fresh.index(next(m for m in fresh if m.content == "And again?")) + 1]
    assert said and all(m.name != TRAJECTORY_MESSAGE for m in said)
    # The first question's chat is there (question, its steps, its answer), then the new one.
    assert said[0].content == QUESTION and said[-1].content == "And again?"
    assert len(said) == len([m for m in first["messages"] if m.name != TRAJECTORY_MESSAGE]) + 1
