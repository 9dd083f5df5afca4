"""``train sft --resume`` against the real trainer: a run cut off and resumed is the same run.

A randomly initialised two-layer Llama (hidden size 32) with the real SmolLM2 tokenizer trains
in seconds on a few hand-made trajectories, through the real ``sft`` -> TRL ``SFTTrainer`` path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import read_card
from langgraph_parallel.train.trajectories import write_trajectories

pytestmark = pytest.mark.integration

STEPS = 12
"""Optimizer steps of a whole run: 8 trajectories, 2 a step, 3 epochs of 4 steps."""
KILLED_AT = 7
"""The step after which run B dies. Its last checkpoint is step 6 (``save_steps`` 2), halfway
through the second epoch, so the resumed piece skips that epoch's first two batches, redoes
step 7, and crosses into the third epoch."""


class Killed(Exception):
    """The stand-in for a kill: raised once the step's metrics line is on disk."""


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Run torch on one thread: on matrices this small more threads only wait on each other
    (a run took 4x longer on two busy cores)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder: a random two-layer Llama and the SmolLM2 tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from langgraph_parallel.models.folders import model_folder

    tokenizer = AutoTokenizer.from_pretrained(model_folder("smollm2"))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight short trajectories of the parallel policy, of different lengths."""

    def messages(i: int) -> list[dict[str, str]]:
        step = f"<think> t </think>\n<search> p{i} ## x </search>"
        found = f"\n<information> Doc {i} " + "word " * i + "</information>\n"
        return [
            {"role": "user", "content": f"Question: who is person number {i}?\n"},
            {"role": "assistant", "content": step},
            {"role": "user", "content": found},
            {"role": "assistant", "content": f"<answer> person {i} </answer>"},
        ]

    records = [
        {
            "id": f"q{i}",
            "policy": "parallel",
            "question_class": "sequential",
            "messages": messages(i),
        }
        for i in range(8)
    ]
    return write_trajectories(tmp_path_factory.mktemp("data"), records, {"command": "made"})


def _config(out: Path, model: Path, data: Path, **overrides: Any) -> Any:
    from langgraph_parallel.train.sft import SFTRunConfig

    settings: dict[str, Any] = {
        "out": str(out),
        "data": str(data),
        "model": str(model),
        "policies": ("parallel",),
        "exclude": (),
        "epochs": 3.0,
        "batch_size": 2,
        "micro_batch": 1,
        "warmup_steps": 1,
        "learning_rate": 1e-2,
        "lora_rank": 4,
        "save_steps": 2,
    }
    return SFTRunConfig(**{**settings, **overrides})


def _steps(folder: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "loss" in r]


def test_a_run_killed_and_resumed_trains_what_an_uninterrupted_run_trains(
    tmp_path: Path, tiny_model: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from safetensors.torch import load_file

    from langgraph_parallel.train import log
    from langgraph_parallel.train.sft import sft

    whole = sft(_config(tmp_path / "a", tiny_model, data), command="a")["parallel"]

    class DyingLog(log.MetricsLog):
        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            super().on_log(args, state, control, **kwargs)
            if state.global_step == KILLED_AT and "loss" in (kwargs.get("logs") or {}):
                raise Killed

    monkeypatch.setattr(log, "MetricsLog", DyingLog)
    with pytest.raises(Killed):
        sft(_config(tmp_path / "b", tiny_model, data), command="b")
    folder = tmp_path / "b" / "parallel"
    assert [r["step"] for r in _steps(folder)] == list(range(1, KILLED_AT + 1))
    checkpoints = sorted(p.name for p in (folder / "trainer").glob("checkpoint-*"))
    assert checkpoints == ["checkpoint-4", "checkpoint-6"]  # save_total_limit 2
    assert not read_card(folder)
    # Without --resume the checkpoints are not silently thrown away.
    with pytest.raises(UserError, match="add --resume"):
        sft(_config(tmp_path / "b", tiny_model, data), command="b")
    monkeypatch.undo()

    resumed = sft(_config(tmp_path / "b", tiny_model, data, resume=True), command="b")["parallel"]

    want, got = _steps(whole), _steps(resumed)
    # Same optimizer steps, each logged once, with the losses of the same batches in the same
    # order from the same weights (the step after the checkpoint is redone, not duplicated).
    assert [r["step"] for r in got] == [r["step"] for r in want] == list(range(1, STEPS + 1))
    for key in ("loss", "grad_norm", "learning_rate"):
        assert torch.allclose(
            torch.tensor([r[key] for r in got]), torch.tensor([r[key] for r in want]), atol=1e-5
        ), key
    a = load_file(str(whole / "adapter_model.safetensors"))
    b = load_file(str(resumed / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)
    card_a, card_b = read_card(whole), read_card(resumed)
    assert card_a["train"]["optimizer_steps"] == card_b["train"]["optimizer_steps"] == STEPS
    assert card_a["train"]["resumed"] == 0 and card_b["train"]["resumed"] == 1
    assert card_b["train"]["train_s"] > 0
    assert card_a["config"] == card_b["config"]
    # The adapter is the product: its checkpoints are gone, and a second --resume skips it.
    assert not list((resumed / "trainer").glob("checkpoint-*"))
    stamp = (resumed / "adapter_model.safetensors").stat().st_mtime_ns
    sft(_config(tmp_path / "b", tiny_model, data, resume=True), command="b")
    assert (resumed / "adapter_model.safetensors").stat().st_mtime_ns == stamp


def test_resume_refuses_checkpoints_of_another_file_or_other_settings(
    tmp_path: Path, tiny_model: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_parallel.train import log
    from langgraph_parallel.train.sft import sft

    class DyingLog(log.MetricsLog):
        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 3 and "loss" in (kwargs.get("logs") or {}):
                raise Killed

    monkeypatch.setattr(log, "MetricsLog", DyingLog)
    with pytest.raises(Killed):
        sft(_config(tmp_path / "c", tiny_model, data), command="c")
    monkeypatch.undo()
    other = data.parent.parent / "other"
    lines = data.read_text().splitlines()
    other_data = write_trajectories(other, [json.loads(x) for x in lines[:6]], {"command": "x"})
    with pytest.raises(UserError, match="another trajectory file.*--data"):
        sft(_config(tmp_path / "c", tiny_model, other_data, resume=True), command="c")
    with pytest.raises(UserError, match="learning_rate=0.01, this command asks learning_rate"):
        sft(_config(tmp_path / "c", tiny_model, data, resume=True, learning_rate=1e-3), command="c")
