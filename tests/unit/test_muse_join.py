"""The ``evidence`` join: an answer the trajectory's own passages lack votes half."""

from __future__ import annotations

from typing import Any

from langgraph_parallel.eval.muse import muse_fields
from langgraph_parallel.parallel_muse.reduce import supported, vote
from tests.fakes import CountingSearcher, muse_graph, rollouts_graph


def trajectory(index: int, answer: str | None, passages: str) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": "Question: where was the treaty signed? Lyon is a city."},
        {"role": "assistant", "content": "<search> treaty </search>"},
        {"role": "user", "content": f"<information>{passages}</information>"},
        {"role": "assistant", "content": f"<answer> {answer} </answer>"},
    ]
    return {"id": f"t{index}", "index": index, "answer": answer, "steps": [], "messages": messages}


def test_supported_looks_for_the_answer_in_the_passages_read_not_the_prompt() -> None:
    assert supported(trajectory(0, "Lyon", "The treaty was signed in Lyon, France.")) is True
    # "Lyon" is in the prompt (the first message) only: not evidence.
    assert supported(trajectory(0, "Lyon", "The treaty was signed in Paris.")) is False
    # Word for word after normalisation, not inside another word.
    assert supported(trajectory(0, "The Lyon", "signed at lyon.")) is True
    assert supported(trajectory(0, "Lyon", "signed at Lyonnais halls")) is False
    assert supported(trajectory(0, "yes", "yes")) is None
    assert supported(trajectory(0, None, "Lyon")) is None


def test_the_evidence_join_outvotes_answers_no_passage_holds() -> None:
    runs = [
        trajectory(0, "Paris", "The treaty was signed in Lyon."),  # invented: half a vote
        trajectory(1, "Paris", "The treaty was signed in Lyon."),
        trajectory(2, "Lyon", "The treaty was signed in Lyon."),
        trajectory(3, "Lyon", "Nothing about it."),
    ]
    chosen, votes = vote(runs, weighted=False)
    assert chosen is not None and chosen["answer"] == "Paris"  # 2 : 2, the first reached
    chosen, votes = vote(runs, weighted=False, evidence=True)
    assert (
        chosen is not None and chosen["answer"] == "Lyon" and votes == {"paris": 1.0, "lyon": 1.5}
    )
    # Yes/no answers cannot be found in a passage: their votes stay whole.
    polar = [trajectory(0, "yes", "x"), trajectory(1, "no", "x"), trajectory(2, "no", "x")]
    assert vote(polar, weighted=False, evidence=True)[1] == {"yes": 1.0, "no": 2.0}


def test_the_graph_joins_by_evidence_and_the_row_keeps_what_joins_read() -> None:
    from tests.unit.test_muse import SPREADS, FakeChat, three_step_agent

    model = FakeChat(agent=three_step_agent(SPREADS))
    graph = rollouts_graph(model, CountingSearcher(), budget=3, join="evidence", max_turns=2)
    state = graph.invoke({"question": "Q?"})
    assert state["aggregation"]["join"] == "evidence" and state["answer"] is not None
    fields = muse_fields(state, [state["answer"]])
    assert fields["em_join_graph"] == fields["em_join_evidence"] == 1.0
    inputs = fields["join_inputs"]
    assert [i["id"] for i in inputs] == ["t0", "t1", "t2"]
    assert {"answer", "em", "confidence", "supported", "parent"} <= set(inputs[0])


def test_auto_asks_a_chat_analyst_to_select_and_lets_a_raw_policy_vote() -> None:
    from langgraph_parallel.agent.policy import PolicySpec
    from langgraph_parallel.parallel_muse.context import resolve_join
    from tests.fakes import ScriptedChatModel

    class RawPolicy(ScriptedChatModel):
        policy: PolicySpec = PolicySpec(style="raw")

    chat, raw = ScriptedChatModel(script=[]), RawPolicy(script=[])
    assert resolve_join("auto", chat) == "select"
    assert resolve_join("auto", raw) == "majority" and resolve_join("auto", None) == "majority"
    assert resolve_join("weighted", chat) == "weighted"  # a join named is kept


def test_a_raw_policy_graph_votes_by_default_and_makes_no_analyst_call() -> None:
    from tests.unit.test_muse import SPREADS, FakeChat, three_step_agent

    class RawFake(FakeChat):
        prompt_style: str = "raw"

    model = RawFake(agent=three_step_agent(SPREADS))
    graph = muse_graph(model, CountingSearcher(), budget=3, max_turns=2)
    state = graph.invoke({"question": "Q?"})
    assert state["aggregation"]["join"] == "majority"
    assert not any(k.startswith("aggregate_") for k in state["counters"])
    # A run's own context saying auto gets the graph's resolution; one naming a join, that.
    again = graph.invoke({"question": "Q?"}, context={"join": "auto"})
    assert again["aggregation"]["join"] == "majority"
    weighted = graph.invoke({"question": "Q?"}, context={"join": "weighted"})
    assert weighted["aggregation"]["join"] == "weighted"
