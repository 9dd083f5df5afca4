"""Training data from scored samples: the best right one a question, preference pairs, refusals."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.apps.cli import main
from langgraph_parallel.errors import UserError
from langgraph_parallel.train.config import SFTRunConfig
from langgraph_parallel.train.from_samples import (
    best_right,
    keeps,
    preference_pair,
    sample_rows,
    write_sample_data,
)
from langgraph_parallel.train.sample_shards import read_samples
from langgraph_parallel.train.trajectories import read_trajectories
from tests.fakes import SeededAgentModel
from tests.unit.test_train_sample import POOL, _run, seeded_reply


def _row(sample: int, *, correct: bool, decomposed: bool = True, calls: int = 2, **kw: Any) -> dict:
    total = kw.pop("total", 1.6 if correct else 0.7)
    return {
        "id": kw.pop("id", "q"),
        "sample": sample,
        "seed": sample,
        "class": kw.pop("qclass", "parallelizable"),
        "question": "Are A and B both x?",
        "gold_answers": kw.pop("gold", ["yes"]),
        "correct": correct,
        "decomposed": decomposed,
        "llm_calls": calls,
        "completion_tokens": kw.pop("tokens", 50),
        "reward": {"total": total},
        "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
        "error": kw.pop("error", None),
    }


def test_the_best_right_sample_is_decomposed_then_has_the_fewest_calls() -> None:
    rows = [
        _row(0, correct=False),
        _row(1, correct=True, decomposed=False, calls=2, total=1.45),
        _row(2, correct=True, calls=3),
        _row(3, correct=True, calls=2, tokens=80),
        _row(4, correct=True, calls=2, tokens=40),
        _row(5, correct=True, calls=1, error="boom"),  # a failed sample is never kept
    ]
    best = best_right(rows, "parallel")
    assert best is not None and best["sample"] == 4
    # The sequential twin is not asked to decompose: its fewest-calls right sample wins.
    rows[1]["llm_calls"] = 1
    best = best_right(rows, "sequential")
    assert best is not None and best["sample"] == 1
    # A bridge question asks no decomposition of the parallel policy either.
    bridge = [_row(0, correct=True, decomposed=False, qclass="sequential")]
    assert best_right(bridge, "parallel") is bridge[0]
    assert best_right([_row(0, correct=False)], "parallel") is None


def test_a_yes_no_question_is_kept_only_when_enough_of_its_samples_are_right() -> None:
    guessed = [_row(i, correct=i < 3) for i in range(8)]  # 3 of 8 right: a coin's rate
    assert keeps(guessed, "parallel") is best_right(guessed, "parallel") is not None
    assert keeps(guessed, "parallel", yes_no_min_right=4) is None
    assert keeps(guessed, "parallel", yes_no_min_right=3) is guessed[0]
    # A failed sample is not a right one, even when marked right.
    failed = [*guessed[:2], _row(2, correct=True, error="boom"), *guessed[3:]]
    assert keeps(failed, "parallel", yes_no_min_right=3) is None
    # "No." normalises to a yes/no answer; an entity answer right as rarely is still kept.
    assert (
        keeps(
            [_row(0, correct=True, gold="No."), _row(1, correct=False)],
            "parallel",
            yes_no_min_right=2,
        )
        is None
    )
    entity = [_row(i, correct=i < 1, gold=["Paris"]) for i in range(8)]
    assert keeps(entity, "parallel", yes_no_min_right=8) is entity[0]


def test_a_preference_pair_rejects_the_wrong_sample_nearest_the_chosen_in_reward() -> None:
    rows = [
        _row(0, correct=False, total=0.35),
        _row(1, correct=True),
        _row(2, correct=False, total=0.7),
        _row(3, correct=False, total=0.7),
    ]
    pair = preference_pair(rows, "parallel")
    assert pair is not None
    chosen, rejected = pair
    assert (chosen["sample"], rejected["sample"]) == (1, 2)
    assert preference_pair([_row(0, correct=True), _row(1, correct=True)], "parallel") is None
    assert preference_pair([_row(0, correct=False)], "parallel") is None


def test_the_data_file_holds_each_question_s_best_right_sample_the_same_on_a_rerun(
    tmp_path: Path,
) -> None:
    _run(tmp_path / "s", SeededAgentModel(reply=seeded_reply), samples=4)
    by_question: dict[str, list[dict[str, Any]]] = {}
    for rows in read_samples(tmp_path / "s").values():
        for row in rows:
            by_question.setdefault(row["id"], []).append(row)
    expected = {
        qid: best["sample"]
        for qid, rows in by_question.items()
        if (best := best_right(rows, "parallel")) is not None
    }
    assert expected and len(expected) < len(POOL) + 1
    path = write_sample_data(
        tmp_path / "o", [tmp_path / "s"], "parallel", init=None, held_out=set()
    )
    records, meta = read_trajectories(path, policies=("parallel",), held_out=set())
    assert {r["id"]: r["sample"] for r in records} == expected
    for record in records:
        row = next(r for r in by_question[record["id"]] if r["sample"] == record["sample"])
        assert record["messages"] == row["messages"] and row["correct"]
        assert record["question_class"] == row["class"] and record["policy"] == "parallel"
    assert meta["selection"]["kept"] == len(records)
    assert meta["selection"]["questions"] == len(POOL)
    assert meta["method"].startswith("rejection-sampling")
    first = path.read_bytes()
    write_sample_data(tmp_path / "o", [tmp_path / "s"], "parallel", init=None, held_out=set())
    assert path.read_bytes() == first


def test_samples_of_another_policy_an_evaluation_question_or_the_readme_people_are_refused(
    tmp_path: Path,
) -> None:
    _run(tmp_path / "s", SeededAgentModel(reply=seeded_reply), samples=1)
    with pytest.raises(UserError, match="sampled the 'parallel' policy"):
        write_sample_data(tmp_path / "o", [tmp_path / "s"], "sequential", init=None, held_out=set())
    with pytest.raises(UserError, match="an evaluation question"):
        sample_rows([tmp_path / "s"], held_out={POOL[0].question.id})
    shard = tmp_path / "s" / "shard-00000.jsonl.gz"
    with gzip.open(shard, "rt") as f:
        rows = [json.loads(line) for line in f]
    rows[0]["question"] = "Were Scott Derrickson and X of the same nationality?"
    with gzip.open(shard, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    with pytest.raises(UserError, match="README question's people"):
        sample_rows([tmp_path / "s"], held_out=set())
    with pytest.raises(UserError, match="no run.json"):
        write_sample_data(tmp_path / "o", [tmp_path], "parallel", init=None, held_out=set())


def test_train_sft_from_samples_trains_the_sampled_policy_from_the_sampled_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_parallel.train.sft as sft_module

    _run(tmp_path / "s", SeededAgentModel(reply=seeded_reply), samples=1)
    seen: list[Any] = []
    monkeypatch.setattr(sft_module, "sft", lambda config, command: seen.append(config) or {})
    assert main(["train", "sft", "--out", "o", "--from-samples", str(tmp_path / "s")]) == 0
    (config,) = seen
    assert config.policies == ("parallel",) and config.init == "smollm2-parallel"
    assert config.from_samples == (str(tmp_path / "s"),)
    argv = ["train", "sft", "--out", "o", "--from-samples", str(tmp_path / "s")]
    assert main([*argv, "--yes-no-min-right", "6"]) == 0
    assert seen[-1].yes_no_min_right == 6
    assert main(["train", "sft", "--out", "o", "--yes-no-min-right", "6"]) == 2  # no samples
    assert main([*argv, "--yes-no-min-right", "0"]) == 2
    assert main([*argv, "--loss-steps", "last"]) == 0 and seen[-1].loss_steps == "last"
    with pytest.raises(UserError, match="--loss-steps takes all or last"):
        SFTRunConfig(out="o", loss_steps="first")  # type: ignore[arg-type]
    assert main([*argv, "--data", "x.jsonl"]) == 2  # a synthesis flag: a clear error
    assert main([*argv, "--policies", "parallel,sequential"]) == 2


def _messages(*steps: str) -> list[dict[str, str]]:
    roles = ["user", "assistant"] * len(steps)
    return [{"role": r, "content": c} for r, c in zip(roles, steps, strict=False)]


def test_a_pair_shares_its_leading_messages_and_keeps_the_spans_of_the_model_s_steps() -> None:
    from langgraph_parallel.train.dpo import pair_row

    chosen = _row(0, correct=True)
    rejected = _row(1, correct=False)
    chosen["messages"] = _messages("Q one", " A two", " obs three", " B")
    rejected["messages"] = _messages("Q one", " A two", " obs four", " C no")
    row = pair_row(chosen, rejected)
    # Same prompt and first step, same observation text differs: the pair splits after " A two".
    assert row["prompt"] == "Q one A two"
    assert (row["chosen"], row["rejected"]) == (" obs three B", " obs four C no")
    assert row["chosen_spans"] == [[10, 12]] and row["rejected_spans"] == [[9, 14]]
    assert row["chosen"][10:12] == " B" and row["rejected"][9:14] == " C no"
    # Different from the first step: the prompt is the question alone.
    rejected["messages"] = _messages("Q one", " X", " obs", " C")
    assert pair_row(chosen, rejected)["prompt"] == "Q one"


class _Tokenizer:
    """Splits on spaces with offsets (each word a token, its space in front)."""

    def __call__(self, text: str, **_: Any) -> dict[str, Any]:
        spans, start = [], 0
        for i in range(1, len(text) + 1):
            if i == len(text) or text[i] == " ":
                spans.append((start, i))
                start = i
        return {"input_ids": [hash(text[a:b]) % 1000 for a, b in spans], "offset_mapping": spans}


def test_only_the_model_s_tokens_of_a_completion_count_in_the_preference_loss() -> None:
    from langgraph_parallel.train.dpo import model_token_mask

    tok = _Tokenizer()
    prompt, completion = "Q one A two", " obs three B"
    ids = tok(prompt + completion)["input_ids"][4:]  # the tail TRL split off as the completion
    assert model_token_mask(tok, prompt, completion, [[10, 12]], ids) == [0, 0, 1]
    with pytest.raises(ValueError, match="not the tail"):
        model_token_mask(tok, prompt, completion, [[10, 12]], [1, 2, 3])
