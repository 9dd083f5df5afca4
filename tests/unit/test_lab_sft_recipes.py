"""The SFT levers' lab entry points: the pairs recipes, the no-reading run, the candidate table."""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lab.experiments.sft import answer_kinds, candidates, lever_noread, lever_pairs


def test_both_pairs_levers_are_one_recipe_with_their_own_counts() -> None:
    first, second = lever_pairs.RECIPES["pairs"], lever_pairs.RECIPES["both"]
    assert [s.makes for s in first.steps] == [
        "runs/pairs-sft/p200/data.jsonl",
        "runs/pairs-sft/h80/data.jsonl",
        "runs/pairs-sft/mix/data.jsonl",
        "",
    ]
    assert "--per-class" in first.steps[0].args
    assert first.steps[0].args[first.steps[0].args.index("--per-class") + 1] == "200"
    assert second.steps[1].args[second.steps[1].args.index("--per-class") + 1] == "60"
    train = first.steps[-1].args
    assert train[:4] == ("train", "sft", "--init", "smollm2-parallel")
    assert lever_pairs.RECIPES["pairs-sequential"].steps[0].args[3] == "smollm2-sequential"
    assert first.log == "runs/pairs-sft/wall.log"


def test_a_recipe_skips_the_data_it_has_stops_at_a_failure_and_logs_its_time(
    tmp_path: Path,
) -> None:
    ran: list[list[str]] = []

    def call(args: Sequence[str], root: Path) -> int:
        assert root == tmp_path
        ran.append(list(args))
        return 0 if len(ran) == 1 else 3

    recipe = lever_pairs.pairs_recipe("runs/x", 2, 1)
    (tmp_path / "runs/x/p2").mkdir(parents=True)
    (tmp_path / "runs/x/p2/data.jsonl").write_text("{}\n")
    assert lever_pairs.run_recipe(recipe, tmp_path, call=call) == 3
    assert [c[:2] for c in ran] == [["train", "sft"], ["train", "chains"]]  # p2 was there
    start, end = (tmp_path / "runs/x/wall.log").read_text().splitlines()
    assert start.startswith("start ") and " commit " in start
    assert end.startswith("rc 3 total ")


def test_an_unknown_recipe_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert lever_pairs.main(["nope"]) == 2
    assert "pairs,pairs-sequential,both,both-eval" in capsys.readouterr().out


def test_the_no_reading_lever_trains_with_the_grounded_sentences_as_the_last_think(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langgraph_parallel.train.synth as synth

    seen: dict[str, Any] = {}

    def fake_cli(argv: list[str]) -> int:
        seen["argv"] = argv
        seen["think"] = synth.reading("Q?", ["A"], {}, "x", 40, lambda budget: f"read {budget}")
        return 0

    monkeypatch.setattr(lever_noread, "cli", fake_cli)
    original = synth.reading
    assert lever_noread.main(["--dry"]) == 0
    assert seen["think"] == "read 40"
    assert seen["argv"][:4] == ["train", "sft", "--out", "runs/lever-noread"]
    assert seen["argv"][-1] == "--dry"
    assert synth.reading is original  # put back once the run ends


def _row(qid: str, cls: str, em: float, turns: int = 1) -> dict[str, Any]:
    return {
        "id": qid,
        "class": cls,
        "em": em,
        "f1": em,
        "llm_calls": 2,
        "turns": turns,
        "prompt_tokens": 10,
        "first_turn_parallel": 1,
        "answer": "a" if em else None,
    }


def _bench_folder(root: Path, name: str, rows: list[dict[str, Any]]) -> str:
    """Write ``rows`` as a bench folder ``root/name``; return its ``NAME=FOLDER`` argument."""
    folder = root / name
    folder.mkdir()
    with gzip.open(folder / "results.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"graph": "g", **r}) + "\n" for r in rows)
    return f"{name}={folder}"


def test_the_candidate_table_averages_each_class() -> None:
    rows = [_row("1", "parallelizable", 1.0), _row("2", "sequential", 0.0, turns=0)]
    table = candidates.table(rows)
    assert table["all"]["n"] == 2 and table["all"]["em"] == 0.5
    assert table["parallelizable"]["first_search_decomposed"] == 1.0
    assert table["sequential"]["first_search_decomposed"] is None  # it never searched
    assert table["sequential"]["answered"] == 0.0


def test_the_candidate_comparison_pairs_em_and_takes_the_calls_ratio_by_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write = functools.partial(_bench_folder, tmp_path)
    cand = [_row("1", "parallelizable", 1.0), _row("2", "sequential", 0.0)]
    seq = [{**_row("1", "parallelizable", 0.0), "llm_calls": 4}, _row("2", "sequential", 0.0)]
    assert candidates.main([write("cand", cand), write("seq", seq)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paired_em"]["cand - seq"]["parallelizable"].startswith("1.000 vs 0.000")
    ratios = out["calls_ratio"]["cand - seq"]
    assert ratios["parallelizable"].startswith("0.50x") and ratios["sequential"].startswith("1.00x")
    assert ratios["all"].startswith("0.67x")


def test_the_candidate_comparison_refuses_an_argument_that_is_not_name_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert candidates.main(["benchmarks/sft/hotpotqa/parallel-search"]) == 2
    err = capsys.readouterr().err
    assert "is not NAME=FOLDER" in err and "usage:" in err
    assert candidates.main(["--help"]) == 0
    assert "NAME=FOLDER" in capsys.readouterr().out


def _comparison(
    qid: str, gold: str, answer: str | None, *, all_gold: float = 1.0
) -> dict[str, Any]:
    em = float(answer is not None and answer.lower() == gold.lower())
    return {
        "id": qid,
        "class": "parallelizable",
        "gold_answers": [gold],
        "answer": answer,
        "em": em,
        "all_gold": all_gold,
    }


def test_answer_kinds_split_comparisons_by_gold_and_count_what_yes_no_questions_got() -> None:
    rows = [
        _comparison("1", "yes", "Yes"),
        _comparison("2", "no", "yes"),
        _comparison("3", "no", "Paris", all_gold=0.5),
        _comparison("4", "Ed Wood", "Ed Wood"),
        _comparison("5", "Ed Wood", "Scott", all_gold=0.0),
        {**_comparison("6", "yes", "yes"), "class": "sequential"},  # not a comparison
    ]
    table = answer_kinds.kinds_table(rows)
    assert table["yes/no"]["n"] == 3 and table["yes/no"]["em"] == 0.333
    assert table["yes/no"]["answered"] == {"yes": 2, "no": 0, "other": 1}
    assert table["yes/no"]["gold"] == {"yes": 1, "no": 2}
    # Where every gold paragraph was found, the misses are the reader's.
    assert table["yes/no"]["all_gold_found"] == 0.667
    assert table["yes/no"]["em_where_all_gold_found"] == 0.5
    assert table["entity"] == {
        "n": 2,
        "em": 0.5,
        "all_gold_found": 0.5,
        "em_where_all_gold_found": 1.0,
    }


def test_answer_kinds_pairs_the_first_run_with_the_others_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write = functools.partial(_bench_folder, tmp_path)
    a = [_comparison("1", "yes", "yes"), _comparison("2", "Ed Wood", "x")]
    b = [_comparison("1", "yes", "maybe"), _comparison("2", "Ed Wood", "Ed Wood")]
    assert answer_kinds.main([write("a", a), write("b", b)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paired_em"]["a - b"]["yes/no"].startswith("1.000 vs 0.000")
    assert out["paired_em"]["a - b"]["entity"].startswith("0.000 vs 1.000")
    assert out["tables"]["b"]["yes/no"]["answered"]["other"] == 1
    assert answer_kinds.main(["benchmarks/sft/hotpotqa/parallel-search"]) == 2
    assert "is not NAME=FOLDER" in capsys.readouterr().err


def test_answer_kinds_votes_over_samples_and_pairs_the_vote_with_pass_at_1() -> None:
    def sample(gold: str, answer: str) -> dict[str, Any]:
        return {
            "class": "parallelizable",
            "gold_answers": [gold],
            "answer": answer,
            "correct": answer.lower() == gold.lower(),
        }

    by_question = {
        # the right answer is 1 of 3 samples but not the majority: the vote loses it
        "1": [sample("yes", "yes"), sample("yes", "no"), sample("yes", "no")],
        # 2 of 3 right: the vote is right
        "2": [sample("Ed Wood", "Ed Wood"), sample("Ed Wood", "ed wood"), sample("Ed Wood", "x")],
        "3": [{**sample("no", "no"), "class": "sequential"}],  # not a comparison
    }
    table = answer_kinds.samples_table(by_question)
    assert table["yes/no"]["questions"] == 1 and table["yes/no"]["pass@1"] == 0.333
    assert table["yes/no"]["majority - pass@1"].startswith("0.000 vs 0.333")
    assert table["entity"]["majority - pass@1"].startswith("1.000 vs 0.667")
    assert table["all"]["questions"] == 2 and table["all"]["samples"] == 6
    assert table["all"]["right_samples"] == [0, 1, 1, 0]  # one question 1 of 3, one 2 of 3
