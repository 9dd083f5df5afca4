"""``train sample`` on the real engine: the shipped policy, the bundled index, two questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_parallel.rewards import score_steps
from langgraph_parallel.train.sample import SampleConfig, reward_config, sample
from langgraph_parallel.train.sample_pool import training_pool
from langgraph_parallel.train.sample_shards import read_samples
from tests.conftest import SHARED_DATA

needs_shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data")


@needs_shared
def test_two_questions_two_samples_each_through_the_shipped_policy(tmp_path: Path) -> None:
    config = SampleConfig(
        out=str(tmp_path / "out"),
        pool=("hotpotqa",),
        limit=1,  # one comparison, one bridge question
        samples=2,
        max_turns=2,
        max_tokens=64,
        shard_size=1,
    )
    sample(config, progress=False)
    shards = read_samples(tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").glob("shard-*")) == [
        "shard-00000.jsonl.gz",
        "shard-00001.jsonl.gz",
    ]
    rows = [row for rows in shards.values() for row in rows]
    pool = training_pool(("hotpotqa",), limit=1)
    assert [(r["id"], r["sample"]) for r in rows] == [
        (p.question.id, k) for p in pool for k in range(2)
    ]
    for row in rows:
        assert row["error"] is None and row["llm_calls"] >= 1
        # What the engine's policy read: the rules prompt it was trained on, then its steps.
        assert row["messages"][0]["role"] == "user" and "Question:" in row["messages"][0]["content"]
        steps = [m["content"] for m in row["messages"][1:] if m["role"] == "assistant"]
        assert steps and steps[0].lstrip().startswith("<think>")
        scored = score_steps(steps, row["gold_answers"], row["class"], reward_config("parallel"))
        assert row["reward"]["total"] == pytest.approx(scored.total)
    assert len({r["seed"] for r in rows}) == 4
    # A rerun finds every sample written and starts no engine work.
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").glob("shard-*")}
    sample(config, model=object(), progress=False)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").glob("shard-*")} == before
