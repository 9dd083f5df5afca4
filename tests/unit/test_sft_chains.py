"""Chain data for SFT (``train chains``, ``train/chains.py``): which trajectories a stage sees."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lab.training import chains as tool
from lab.training.chains_files import combine
from langgraph_parallel.errors import UserError

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


def synthesis(folder: Path, rows: list[dict], record: dict) -> Path:
    """A hand-made ``train sft --synthesize-only`` folder; returns its ``data.jsonl``."""
    folder.mkdir()
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "data.json").write_text(json.dumps(record))
    return folder / "data.jsonl"


def both_policies(kinds: list[tuple[str, str, int]]) -> list[dict]:
    """``n`` rows of each (dataset, type), for each policy, with the same ids."""
    return [
        {"id": f"{d}-{t}-{i}", "dataset": d, "type": t, "policy": p}
        for p in ("parallel", "sequential")
        for d, t, n in kinds
        for i in range(n)
    ]


def test_select_keeps_every_chain_a_few_others_and_one_policy(tmp_path: Path) -> None:
    rows = both_policies(
        [
            ("musique", "2hop", 3),
            ("musique", "4hop1", 2),
            ("2wiki", "inference", 2),
            ("2wiki", "compositional", 30),
            ("2wiki", "comparison", 30),
            ("2wiki", "bridge_comparison", 5),
        ]
    )
    data = synthesis(tmp_path / "s", rows, {"command": "synth", "trajectories": 2})
    assert tool.select(data, tmp_path / "o", "parallel") == 3 + 2 + 2 + 20 + 24
    kept = [json.loads(line) for line in (tmp_path / "o" / "data.jsonl").open()]
    assert {r["policy"] for r in kept} == {"parallel"}
    by_type: dict[str, int] = {}
    for r in kept:
        by_type[r["type"]] = by_type.get(r["type"], 0) + 1
    assert by_type == {"2hop": 3, "4hop1": 2, "inference": 2, "compositional": 20, "comparison": 24}
    meta = json.loads((tmp_path / "o" / "data.json").read_text())
    assert meta["command"] == f"synth && {meta['selection']}" and meta["trajectories"] == len(kept)
    assert "select" in meta["selection"]


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data")
def test_heldout_holds_every_question_the_benchmarks_draw(tmp_path: Path) -> None:
    from langgraph_parallel.eval.datasets import load_questions

    out = tmp_path / "h.jsonl.gz"
    tool.heldout(out)
    held = {json.loads(line)["id"] for line in gzip.decompress(out.read_bytes()).splitlines()}
    musique = load_questions(SHARED / "musique_dev_with_paragraphs200.jsonl.gz", limit=17, seed=0)
    wiki = SHARED / "2wikimultihopqa_dev_sample500.jsonl.gz"
    chains = load_questions(wiki, types=["compositional", "inference"], limit=17, seed=0)
    sft_sample = load_questions(wiki, limit=50, seed=0)
    assert {q.id for q in [*musique, *chains, *sft_sample]} <= held
    # The committed copy (what a GPU run's --exclude names) is what the tool writes today.
    assert gzip.decompress((REPO / "data" / "bench_heldout_chains.jsonl.gz").read_bytes()) == (
        gzip.decompress(out.read_bytes())
    )


def test_mix_keeps_long_chains_caps_the_rest_and_replays_comparisons(tmp_path: Path) -> None:
    def write(name: str, kinds: list[tuple[str, str, int]], command: str) -> Path:
        record = {"command": command, "datasets": [f"{name}.jsonl.gz"], "config": {"n": name}}
        return synthesis(tmp_path / name, both_policies(kinds), record)

    chains = write(
        "chains",
        [("musique", "2hop", 50), ("musique", "3hop1", 3), ("2wiki", "inference", 5)],
        "synth chains",
    )
    replay = write("hq", [("hotpotqa", "comparison", 90), ("hotpotqa", "bridge", 39)], "synth hq")
    assert tool.mix(chains, replay, tmp_path / "o", "parallel") == 40 + 3 + 5 + 80 + 30
    kept = [json.loads(line) for line in (tmp_path / "o" / "data.jsonl").open()]
    assert {r["policy"] for r in kept} == {"parallel"}
    assert len({r["id"] for r in kept}) == len(kept)
    by_type: dict[str, int] = {}
    for r in kept:
        by_type[r["type"]] = by_type.get(r["type"], 0) + 1
    assert by_type == {"2hop": 40, "3hop1": 3, "inference": 5, "comparison": 80, "bridge": 30}
    sequential = tmp_path / "s"
    tool.mix(chains, replay, sequential, "sequential")
    same = [json.loads(line)["id"] for line in (sequential / "data.jsonl").open()]
    assert same == [r["id"] for r in kept]  # both policies: the same questions, same order
    meta = json.loads((tmp_path / "o" / "data.json").read_text())
    # The card copies command and datasets: both syntheses and the mix, both question files.
    assert meta["command"] == f"synth chains && synth hq && {meta['selection']}"
    assert meta["datasets"] == ["chains.jsonl.gz", "hq.jsonl.gz"]
    assert meta["replay"]["config"] == {"n": "hq"} and meta["config"] == {"n": "chains"}
    assert meta["trajectories"] == len(kept) and "mix" in meta["selection"]


def test_combine_joins_both_policies_and_refuses_a_lone_or_repeated_one(tmp_path: Path) -> None:
    def write(name: str, policies: tuple[str, ...], ids: list[str]) -> Path:
        rows = [{"id": i, "dataset": name, "type": "t", "policy": p} for p in policies for i in ids]
        record = {"command": f"make {name}", "datasets": [f"{name}.gz"], "config": {"n": name}}
        return synthesis(tmp_path / name, rows, record)

    hq = write("hq", ("parallel", "sequential"), ["a", "b"])
    chains_p = write("cp", ("parallel",), ["c", "d"])
    chains_s = write("cs", ("sequential",), ["c", "d"])
    assert combine([hq, chains_p, chains_s], tmp_path / "o") == 8
    kept = [json.loads(line) for line in (tmp_path / "o" / "data.jsonl").open()]
    assert sorted((r["id"], r["policy"]) for r in kept) == sorted(
        (i, p) for i in "abcd" for p in ("parallel", "sequential")
    )
    meta = json.loads((tmp_path / "o" / "data.json").read_text())
    assert meta["command"].startswith("make hq && make cp && make cs && ")
    assert meta["datasets"] == ["hq.gz", "cp.gz", "cs.gz"]
    assert meta["by_policy"] == {"parallel": 4, "sequential": 4}
    assert [part["config"] for part in meta["parts"]] == [{"n": "hq"}, {"n": "cp"}, {"n": "cs"}]
    with pytest.raises(UserError, match="lack a policy"):
        combine([hq, chains_p], tmp_path / "lone")
    with pytest.raises(UserError, match="two parallel trajectories"):
        combine([hq, chains_p, chains_s, chains_p], tmp_path / "twice")
    assert not (tmp_path / "lone").exists() and not (tmp_path / "twice").exists()


def test_combine_repeats_a_question_class_for_both_policies_and_refuses_an_unknown_one(
    tmp_path: Path,
) -> None:
    rows = [
        {"id": i, "dataset": "d", "type": "t", "question_class": c, "policy": p}
        for p in ("parallel", "sequential")
        for i, c in (("a", "parallelizable"), ("b", "sequential"), ("c", "sequential"))
    ]
    data = synthesis(tmp_path / "s", rows, {"command": "make s", "datasets": ["s.gz"]})
    assert combine([data], tmp_path / "o", repeat={"parallelizable": 3}) == 2 * (3 + 2)
    kept = [json.loads(line) for line in (tmp_path / "o" / "data.jsonl").open()]
    for policy in ("parallel", "sequential"):
        ids = sorted(r["id"] for r in kept if r["policy"] == policy)
        assert ids == ["a", "a", "a", "b", "c"]
    meta = json.loads((tmp_path / "o" / "data.json").read_text())
    assert meta["repeat"] == {"parallelizable": 3}
    assert meta["command"].endswith("--repeat parallelizable=3")
    with pytest.raises(UserError, match="name a question class"):
        combine([data], tmp_path / "typo", repeat={"comparison": 2})
    assert not (tmp_path / "typo").exists()


def test_first_draws_the_same_questions_for_both_policies_within_the_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = {("hotpotqa", "comparison"): None, ("hotpotqa", "bridge"): 3, ("musique", None): None}
    monkeypatch.setattr(tool, "FIRST", caps)
    hotpot = synthesis(
        tmp_path / "h",
        both_policies([("hotpotqa", "comparison", 4), ("hotpotqa", "bridge", 10)]),
        {"command": "synth hotpot", "datasets": ["h.gz"], "trajectories": 28},
    )
    chains = synthesis(
        tmp_path / "c",
        both_policies(
            [("musique", "2hop", 2), ("musique", "3hop1", 1), ("2wiki", "comparison", 5)]
        ),
        {"command": "synth chains", "datasets": ["m.gz", "w.gz"], "trajectories": 16},
    )
    assert tool.first([hotpot, chains], tmp_path / "o") == 2 * (4 + 3 + 2 + 1)
    kept = [json.loads(line) for line in (tmp_path / "o" / "data.jsonl").open()]
    ids = {p: sorted(r["id"] for r in kept if r["policy"] == p) for p in ("parallel", "sequential")}
    assert ids["parallel"] == ids["sequential"]  # the same questions for both policies
    assert sum(i.startswith("hotpotqa-bridge") for i in ids["parallel"]) == 3
    assert not any(i.startswith("2wiki") for i in ids["parallel"])  # no cap: not in the stage
    record = json.loads((tmp_path / "o" / "data.json").read_text())
    assert record["command"].startswith(
        "synth hotpot && synth chains && langgraph-parallel train chains first"
    )
    assert record["datasets"] == ["h.gz", "m.gz", "w.gz"]
    # Seeded: the same draw again.
    tool.first([hotpot, chains], tmp_path / "again")
    again = [json.loads(line)["id"] for line in (tmp_path / "again" / "data.jsonl").open()]
    assert again == [r["id"] for r in kept]


def test_combine_keeps_the_passage_budget_the_parts_share_and_refuses_mixed_ones(
    tmp_path: Path,
) -> None:
    rows = both_policies([("hotpotqa", "comparison", 1)])
    config = {"max_turns": 4, "top_k": 3, "passage_sentences": 2}
    a = synthesis(tmp_path / "a", rows, {"command": "a", "config": config})
    more = both_policies([("musique", "2hop", 1)])
    b = synthesis(tmp_path / "b", more, {"command": "b", "config": {**config, "max_turns": 6}})
    combine([a, b], tmp_path / "o")
    record = json.loads((tmp_path / "o" / "data.json").read_text())
    # The card copies this: the trained policy is served the 2-sentence cut it was trained on.
    assert record["config"] == {"top_k": 3, "passage_sentences": 2}
    whole = synthesis(
        tmp_path / "w", more, {"command": "w", "config": {**config, "passage_sentences": None}}
    )
    with pytest.raises(UserError, match="different --passage-sentences"):
        combine([a, whole], tmp_path / "x")
