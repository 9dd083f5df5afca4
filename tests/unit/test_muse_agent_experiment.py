"""The parallel-muse-agent experiment's comparison: pairs by id, intervals, identical runs."""

from lab.experiments.muse.muse_agent import GRAPH, JOINS, WRAPPER, compare, markdown


def _row(graph: str, qid: str, right: bool, cost: float) -> dict:
    return {
        "graph": graph,
        "id": qid,
        "answer": "yes" if right else "no",
        **{key: float(right) for key in JOINS},
        "agent_cost": cost,
        "agent_uncached_prefill": cost,
        "agent_generated": 10.0,
        "agent_cached_prefill": 5.0,
    }


def test_compare_pairs_by_id_and_names_the_questions_that_ran_differently() -> None:
    rows = [
        _row(WRAPPER, "a", True, 100.0),
        _row(GRAPH, "a", True, 100.0),
        _row(WRAPPER, "b", True, 300.0),
        _row(GRAPH, "b", False, 100.0),
        _row(GRAPH, "c", True, 100.0),  # the wrapper did not run it: not paired
    ]
    out = compare(rows)
    assert out["n"] == 2
    join = out["joins"]["em_join_graph"]
    assert (join["wrapper"], join["graph"], join["diff"]) == (1.0, 0.5, 0.5)
    assert (join["wins"], join["losses"]) == (1, 0)
    assert join["low"] <= join["diff"] <= join["high"]
    assert out["costs"]["agent_cost"] == {"wrapper": 200.0, "graph": 100.0, "ratio": 2.0}
    assert (out["identical"], out["differ"]) == (1, ["b"])
    page = markdown({"command": "c", "samples": {"all": out}})
    assert "| em_join_graph | 1.000 | 0.500 | +0.500" in page
