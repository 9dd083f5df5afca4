"""``train sft --synthesize-only`` / ``--data``: the trajectory file, its checks, and the card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.train import sft as sft_module
from langgraph_parallel.train.sft import SFTRunConfig, synthesize_run
from langgraph_parallel.train.trajectories import read_trajectories, write_trajectories


def _record(qid: str, policy: str, cls: str = "parallelizable") -> dict[str, Any]:
    return {
        "id": qid,
        "dataset": "hotpotqa",
        "type": "comparison",
        "question_class": cls,
        "policy": policy,
        "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
    }


RECORDS = [_record("a", "parallel"), _record("a", "sequential"), _record("b", "sequential")]


def test_written_file_reads_back_with_its_synthesis_record(tmp_path: Path) -> None:
    path = write_trajectories(tmp_path, RECORDS, {"command": "c", "config": {"top_k": 3}})
    records, meta = read_trajectories(path, policies=("parallel",), held_out=set())
    assert records == RECORDS
    assert meta["command"] == "c" and meta["config"] == {"top_k": 3}
    assert meta["trajectories"] == 3 and meta["by_policy"] == {"parallel": 1, "sequential": 2}
    assert len(meta["sha256"]) == 64
    (tmp_path / "data.json").write_text("{broken")
    with pytest.raises(UserError, match="data.json is not JSON"):
        read_trajectories(path, policies=("parallel",), held_out=set())
    (tmp_path / "data.json").unlink()  # a file without its record still trains
    assert read_trajectories(path, policies=("parallel",), held_out=set())[1].keys() == {"sha256"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json\n", "not a JSON-lines file"),
        (json.dumps({"id": "a", "policy": "parallel"}) + "\n", "missing \\['question_class'"),
        (json.dumps({**_record("a", "parallel"), "policy": "both"}) + "\n", "a policy other"),
        (json.dumps(_record("held", "parallel")) + "\n", "1 question\\(s\\) of the held-out"),
        (json.dumps(_record("a", "sequential")) + "\n", "no parallel trajectory"),
    ],
)
def test_a_bad_trajectory_file_is_refused_before_training(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "data.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError, match=message):
        read_trajectories(path, policies=("parallel",), held_out={"held"})


def test_synthesize_run_records_how_the_file_was_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sft_module, "pick_questions", lambda config: [])
    monkeypatch.setattr(sft_module, "synthesize_all", lambda config, golds: RECORDS)
    config = SFTRunConfig(out=str(tmp_path / "s"), per_class=7, max_turns=5, exclude=())
    path = synthesize_run(config, command="langgraph-parallel train sft --synthesize-only")
    meta = json.loads((tmp_path / "s" / "data.json").read_text())
    assert path == tmp_path / "s" / "data.jsonl"
    assert meta["config"] == {
        "per_class": 7,
        "corpus": None,
        "max_turns": 5,
        "top_k": 3,
        "passage_sentences": None,
        "seed": 0,
    }
    assert meta["command"].endswith("--synthesize-only")
    assert meta["datasets"][0].endswith("hotpotqa_dev_distractor_subset.jsonl.gz")
    monkeypatch.setattr(sft_module, "synthesize_all", lambda config, golds: [])
    with pytest.raises(UserError, match="no trajectory survived"):
        synthesize_run(config)


def test_the_passage_budget_reaches_the_synthesis_and_data_json(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from langgraph_parallel.train import synth

    seen: list[Any] = []

    def fake_synthesize(golds: Any, policy: str, search: Any, **options: Any) -> list[Any]:
        seen.append(options["passage_sentences"])
        return [r for r in RECORDS if r["policy"] == policy]

    monkeypatch.setattr(sft_module, "pick_questions", lambda config: [])
    monkeypatch.setattr(sft_module, "searcher_for", lambda config, golds: object())
    monkeypatch.setattr(synth, "synthesize", fake_synthesize)
    config = SFTRunConfig(out=str(tmp_path / "s"), passage_sentences=2, exclude=())
    synthesize_run(config)
    assert seen == [2, 2]  # both policies
    meta = json.loads((tmp_path / "s" / "data.json").read_text())
    assert meta["config"]["passage_sentences"] == 2
    with pytest.raises(UserError, match="--passage-sentences"):
        SFTRunConfig(out="o", passage_sentences=0)


def test_training_from_a_file_uses_its_records_and_its_synthesis_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import langgraph_parallel.train.lora as lora

    data = write_trajectories(
        tmp_path / "s",
        RECORDS,
        {"command": "made", "datasets": ["d.jsonl"], "config": {"per_class": 7, "max_turns": 5}},
    )

    def no_synthesis(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("--data must not synthesise")

    seen: dict[str, Any] = {}

    def fake_train(config: Any, policy: str, records: Any, folder: Path, **kw: Any) -> Path:
        seen[policy] = (records, kw["provenance"])
        return folder

    monkeypatch.setattr(sft_module, "synthesize_all", no_synthesis)
    monkeypatch.setattr(lora, "train_policy", fake_train)
    config = SFTRunConfig(out=str(tmp_path / "t"), data=str(data), exclude=(), per_class=150)
    folders = sft_module.sft(config, command="train")
    assert folders == {p: tmp_path / "t" / p for p in ("parallel", "sequential")}
    records, provenance = seen["sequential"]
    assert [r["id"] for r in records] == ["a", "b"]
    # The file's settings, not 150; a file from before the budget showed whole passages.
    assert provenance["synthesis"] == {"per_class": 7, "max_turns": 5, "passage_sentences": None}
    assert provenance["data"]["files"] == ["d.jsonl"]
    assert provenance["data"]["synthesis_command"] == "made"
    assert provenance["data"]["trajectories_file"].endswith("s/data.jsonl")
    (tmp_path / "s" / "data.json").unlink()  # without its record the settings are unknown
    sft_module.sft(config, command="train")
    assert seen["parallel"][1]["synthesis"]["per_class"] is None


def test_train_sft_cli_synthesizes_only_or_trains_from_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_parallel.apps.cli import main

    made: list[SFTRunConfig] = []
    trained: list[SFTRunConfig] = []
    monkeypatch.setattr(
        sft_module, "synthesize_run", lambda c, command: made.append(c) or tmp_path / "data.jsonl"
    )
    monkeypatch.setattr(sft_module, "sft", lambda c, command: trained.append(c) or {})
    assert main(["train", "sft", "--out", "o", "--synthesize-only"]) == 0
    assert len(made) == 1 and not trained
    assert "train sft --data" in capsys.readouterr().out
    assert main(["train", "sft", "--out", "o", "--data", "x/data.jsonl"]) == 0
    assert trained[0].data == "x/data.jsonl"
    # Synthesis flags with --data are refused (exit 2, one error line), nothing runs.
    assert main(["train", "sft", "--out", "o", "--data", "x", "--dataset", "d.jsonl"]) == 2
    assert main(["train", "sft", "--out", "o", "--data", "x", "--synthesize-only"]) == 2
    assert main(["train", "sft", "--out", "o", "--data", "x", "--passage-sentences", "2"]) == 2
    assert len(made) == 1 and len(trained) == 1
    assert made[0].passage_sentences is None
    assert (
        main(["train", "sft", "--out", "o", "--synthesize-only", "--passage-sentences", "2"]) == 0
    )
    assert made[1].passage_sentences == 2


def test_a_batch_is_split_over_processes_and_micro_batches() -> None:
    from langgraph_parallel.train.lora import batch_split

    assert batch_split(8, 2, 1, gpu=False) == (2, 4)  # CPU: 2 a forward, 4 accumulated
    assert batch_split(8, 2, 2, gpu=False) == (2, 2)  # two processes: each half of it
    assert batch_split(8, 2, 1, gpu=True) == (8, 1)  # a GPU takes the whole batch
    assert batch_split(8, 2, 4, gpu=True) == (2, 1)  # four GPUs, 2 each
    with pytest.raises(UserError, match="multiple of their product"):
        batch_split(6, 2, 2, gpu=False)
    with pytest.raises(UserError, match="does not split"):
        batch_split(2, 2, 4, gpu=True)
