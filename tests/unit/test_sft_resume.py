"""``train sft --save-steps/--resume`` without a trainer: flags, where each policy starts, refusals.

Checkpoints here are folders with the trainer state the real trainer writes
(``TrainerState.save_to_json`` with a :class:`RunRecord`); the real resume is in
``tests/integration/test_resume_real.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from transformers import TrainerState

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import MODEL_CARD
from langgraph_parallel.train import sft as sft_module
from langgraph_parallel.train.log import MetricsLog
from langgraph_parallel.train.resume import (
    RunRecord,
    Start,
    check_fresh,
    plan_start,
    run_settings,
)
from langgraph_parallel.train.sft import SFTRunConfig
from langgraph_parallel.train.trajectories import write_trajectories

SHA = "a" * 64
CONFIG = SFTRunConfig(out="o", exclude=())
SETTINGS = run_settings(CONFIG)


def _checkpoint(
    folder: Path, step: int, *, sha256: str = SHA, settings: dict[str, Any] | None = None
) -> Path:
    path = folder / "trainer" / f"checkpoint-{step}"
    path.mkdir(parents=True)
    record = RunRecord(sha256, settings or SETTINGS, train_s=12.5, resumed=1)
    TrainerState(global_step=step, stateful_callbacks=[record]).save_to_json(
        str(path / "trainer_state.json")
    )
    return path


def _card(folder: Path, sha256: str = SHA) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MODEL_CARD).write_text(json.dumps({"data": {"sha256": sha256}}))


def test_train_sft_cli_passes_save_steps_and_resume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_parallel.apps.cli import main

    seen: list[SFTRunConfig] = []
    monkeypatch.setattr(sft_module, "sft", lambda config, command: seen.append(config) or {})
    assert main(["train", "sft", "--out", "o"]) == 0
    assert main(["train", "sft", "--out", "o", "--data", "d", "--resume", "--save-steps", "5"]) == 0
    assert (seen[0].save_steps, seen[0].resume) == (10, False)
    assert (seen[1].save_steps, seen[1].resume) == (5, True)
    # Refused with one error line (exit 2), nothing runs.
    assert main(["train", "sft", "--out", "o", "--resume", "--synthesize-only"]) == 2
    assert main(["train", "sft", "--out", "o", "--save-steps", "-1"]) == 2
    assert len(seen) == 2
    with pytest.raises(UserError, match="--save-steps"):
        SFTRunConfig(out="o", save_steps=-1)


def test_a_policy_starts_fresh_resumes_or_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "parallel"
    assert plan_start(folder, sha256=SHA, settings=SETTINGS) == Start()
    check_fresh({"parallel": folder})
    _checkpoint(folder, 4)
    newest = _checkpoint(folder, 6)
    (folder / "trainer" / "checkpoint-8").mkdir()  # cut off while saving: no trainer state
    # The wall time so far comes from the checkpoint; this is its record's second resumption.
    assert plan_start(folder, sha256=SHA, settings=SETTINGS) == Start(
        newest, pytest.approx(12.5, abs=0.01), 2
    )
    # A finished adapter (its card is written last) is skipped, checkpoints or not.
    _card(folder)
    assert plan_start(folder, sha256=SHA, settings=SETTINGS) is None


def test_resume_refuses_what_would_not_continue_the_same_run(tmp_path: Path) -> None:
    folder = tmp_path / "parallel"
    checkpoint = _checkpoint(folder, 2)
    with pytest.raises(UserError, match="unfinished run: add --resume .* or delete .*trainer"):
        check_fresh({"sequential": tmp_path / "sequential", "parallel": folder})
    with pytest.raises(UserError, match="another trajectory file .*aaaaaaaaaaaa, this one bbb"):
        plan_start(folder, sha256="b" * 64, settings=SETTINGS)
    other = {**SETTINGS, "learning_rate": 1e-4, "processes": 2}
    with pytest.raises(UserError, match="learning_rate=0.0005, processes=1, this command asks"):
        plan_start(folder, sha256=SHA, settings=other)
    # A loss on the last step alone is another run, not a continuation of one on every step.
    with pytest.raises(UserError, match="loss_steps='all', this command asks loss_steps='last'"):
        plan_start(folder, sha256=SHA, settings={**SETTINGS, "loss_steps": "last"})
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    with pytest.raises(UserError, match=r"does not record its run \(not from train sft\)"):
        plan_start(folder, sha256=SHA, settings=SETTINGS)
    _card(tmp_path / "sequential", "c" * 64)
    with pytest.raises(UserError, match="adapter trained on another trajectory file"):
        plan_start(tmp_path / "sequential", sha256=SHA, settings=SETTINGS)


def _records() -> list[dict[str, Any]]:
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
    return [
        {"id": "a", "policy": p, "question_class": "parallelizable", "messages": messages}
        for p in ("parallel", "sequential")
    ]


def test_sft_resume_skips_finished_policies_and_continues_the_next(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import hashlib

    import langgraph_parallel.train.lora as lora

    data = write_trajectories(tmp_path / "s", _records(), {})
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path / "run"
    config = SFTRunConfig(out=str(out), data=str(data), exclude=(), resume=True)
    _card(out / "parallel", sha)
    checkpoint = _checkpoint(out / "sequential", 3, sha256=sha, settings=run_settings(config))
    trained: dict[str, Start] = {}

    def fake_train(config: Any, policy: str, records: Any, folder: Path, **kw: Any) -> Path:
        trained[policy] = kw["start"]
        return folder

    monkeypatch.setattr(lora, "train_policy", fake_train)
    folders = sft_module.sft(config, command="c")
    assert folders == {"parallel": out / "parallel", "sequential": out / "sequential"}
    assert trained == {"sequential": Start(checkpoint, pytest.approx(12.5, abs=0.01), 2)}
    # Without --resume the checkpoints of sequential stop the run before parallel retrains.
    trained.clear()
    with pytest.raises(UserError, match="add --resume"):
        sft_module.sft(SFTRunConfig(out=str(out), data=str(data), exclude=()), command="c")
    assert not trained


def test_resume_without_data_trains_on_the_runs_own_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import langgraph_parallel.train.lora as lora

    made: list[str] = []

    def synthesize(config: SFTRunConfig, *, command: str = "") -> Path:
        made.append(command)
        meta = {"datasets": ["d.jsonl"], "config": {"per_class": 7, "corpus": None}}
        return write_trajectories(Path(config.out), _records(), meta)

    seen: list[Path] = []
    monkeypatch.setattr(sft_module, "synthesize_run", synthesize)
    monkeypatch.setattr(lora, "train_policy", lambda *a, **kw: seen.append(a[3]) or a[3])
    config = SFTRunConfig(out=str(tmp_path), datasets=("d.jsonl",), per_class=7, exclude=())
    resume = SFTRunConfig(**{**config.__dict__, "resume": True})
    sft_module.sft(resume, command="first")  # nothing written yet: it synthesises
    sft_module.sft(resume, command="again")  # the file is there: it trains on it
    assert made == ["first"] and len(seen) == 4
    sft_module.sft(config, command="fresh")  # without --resume a run synthesises, as before
    assert made == ["first", "fresh"]
    with pytest.raises(UserError, match="per_class=7, this command asks per_class=9.*--data"):
        sft_module.sft(SFTRunConfig(**{**resume.__dict__, "per_class": 9}), command="c")
    with pytest.raises(UserError, match="datasets=\\['d.jsonl'\\]"):
        sft_module.sft(SFTRunConfig(**{**resume.__dict__, "datasets": ("e.jsonl",)}), command="c")
    # Forgetting --resume is refused before a synthesis rewrites the checkpoints' data file.
    _checkpoint(tmp_path / "parallel", 2)
    with pytest.raises(UserError, match="add --resume"):
        sft_module.sft(config, command="forgot")
    assert made == ["first", "fresh"]


def test_metrics_log_starts_over_from_the_checkpoints_log_history(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    # The interrupted piece logged steps 1-3 and died; its last checkpoint was step 2.
    path.write_text("".join(json.dumps({"step": s, "loss": 9.0}) + "\n" for s in (1, 2, 3)))
    log = MetricsLog(path)
    history = [{"loss": 1.0, "epoch": 0.5, "step": 1}, {"loss": 0.5, "epoch": 1.0, "step": 2}]
    state = SimpleNamespace(is_world_process_zero=True, log_history=history, global_step=2)
    log.on_train_begin(None, state, None)
    log.on_log(None, SimpleNamespace(**{**state.__dict__, "global_step": 3}), None, {"loss": 0.2})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows == [
        {"step": 1, "loss": 1.0, "epoch": 0.5},
        {"step": 2, "loss": 0.5, "epoch": 1.0},
        {"step": 3, "loss": 0.2},
    ]
    log.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, log_history=[]), None)
    assert path.read_text() == ""  # a new run starts an empty log


def test_lora_on_the_upper_layers_adapts_only_those_and_every_linear_in_them() -> None:
    import torch
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from langgraph_parallel.train.lora import linear_names, lora_config

    torch.manual_seed(0)
    tiny = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=4,
            num_attention_heads=2,
            num_key_value_heads=2,
        )
    )
    names = linear_names(tiny)
    assert names == sorted(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    top = get_peft_model(tiny, lora_config(SFTRunConfig(out="o", lora_layers=1), tiny))
    adapted = {
        n.split(".layers.")[1].split(".")[0] for n, _ in top.named_parameters() if "lora_" in n
    }
    assert adapted == {"3"}  # the last layer only
    per_layer = [n for n, _ in top.named_parameters() if "lora_A" in n]
    assert len(per_layer) == len(names)  # every linear layer of it
    with pytest.raises(UserError, match="--lora-layers"):
        SFTRunConfig(out="o", lora_layers=0)
    whole = lora_config(SFTRunConfig(out="o"), tiny)
    assert whole.target_modules == "all-linear" and whole.layers_to_transform is None
