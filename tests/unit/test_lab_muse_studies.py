"""The ParallelMuse studies beside the defaults: the repeat rule's pairing and its runs' spec."""

from __future__ import annotations

from typing import Any

from lab.catalog import EXPERIMENTS
from lab.experiments.muse import repeats
from lab.experiments.muse.defaults.defaults import bridge_spec


def _row(qid: str, em: float, skips: int) -> dict[str, Any]:
    return {
        "id": qid,
        "graph": "parallel-muse",
        "em": em,
        "em_single": em,
        "em_join_majority": em,
        "em_join_evidence": em,
        "em_any": 1.0,
        "repeat_skips": skips,
        "turns": 3,
        "sub_queries": 4,
        "agent_cost": 100.0 + skips,
        "reduction_cost": 10.0,
        "agent_uncached_prefill": 60.0,
        "agent_generated": 40.0,
        "llm_calls": 4,
        "stop_reason": "answer",
    }


def test_the_repeat_rule_is_paired_on_the_questions_both_sides_ran() -> None:
    after = [_row("q1", 1.0, 2), _row("q2", 0.0, 0), _row("q3", 1.0, 5)]
    before = [_row("q1", 0.0, 0), _row("q2", 0.0, 0)]  # q3 was not asked before
    s = repeats.summary(after, before)
    assert s["n"] == 2
    assert s["counts"]["after"]["repeat_skips"] == 2
    assert s["counts"]["after"]["questions_with_repeat_skips"] == 1
    assert s["em"]["em"] == {"after": 1.0, "before": 0.0, "difference": 0.5, "interval": [0.0, 1.0]}
    assert s["cost"]["after"]["user_cost"] == 111.0
    page = repeats.markdown({**s, "after_label": "with", "before_label": "without"})
    assert "| with | 2 |" in page and "| em | 0 | 1 | +0.500 [+0.000, +1.000] |" in page


def test_the_studies_run_the_defaults_questions_and_are_declared() -> None:
    spec = bridge_spec(limit=25, graphs=("rollouts-majority",), out="x")
    assert (spec.types, spec.index, spec.max_turns, spec.seed, spec.model) == (
        ("bridge",),
        "bm25",
        6,
        0,
        "auto",
    )
    assert spec.dataset.endswith("data/hotpotqa_dev_sample300.jsonl.gz")
    for name, out in (
        ("parallel-muse-defaults", "benchmarks/parallel_muse/defaults/hotpotqa"),
        ("parallel-muse-repeats", "benchmarks/parallel_muse/repeats"),
        ("parallel-muse-later", "benchmarks/parallel_muse/gpu-policy-later"),
    ):
        assert EXPERIMENTS[name].out == out
