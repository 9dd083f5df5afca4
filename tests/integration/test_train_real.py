"""GRPO against the real things: TRL's GRPOTrainer, the embedded SmolLM2, the FAISS index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.models.folders import folder_prompt_style
from langgraph_parallel.paths import repo_data_dir


def test_one_grpo_step_masks_retrieved_tokens_and_saves_a_loadable_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trl

    from langgraph_parallel.train.grpo import TrainConfig, train
    from langgraph_parallel.train.rollout import GraphRollout

    rollouts: list[dict[str, Any]] = []
    losses: list[dict[str, Any]] = []
    real_rollout, real_loss = GraphRollout.__call__, trl.GRPOTrainer._compute_loss

    def record_rollout(self: Any, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        out = real_rollout(self, prompts, trainer)
        rollouts.append(out)
        return out

    def record_loss(self: Any, model: Any, inputs: dict[str, Any]) -> Any:
        losses.append(inputs)
        return real_loss(self, model, inputs)

    monkeypatch.setattr(GraphRollout, "__call__", record_rollout)
    monkeypatch.setattr(trl.GRPOTrainer, "_compute_loss", record_loss)
    config = TrainConfig(
        dataset=str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
        exclude=None,
        out=str(tmp_path / "run"),
        steps=1,
        group_size=2,
        limit=4,
        max_turns=2,
        max_tokens=40,
        top_k=1,
    )
    folder = train(config, command="test")

    # Every environment token TRL trains on has loss weight 0 (tool_mask = our env_mask).
    (out,) = rollouts
    # The default start, the SFT policy, opens every question with a search, so rollouts carry
    # retrieved tokens and the check below is never vacuous.
    assert any(0 in mask for mask in out["env_mask"])
    tool_mask = losses[0]["tool_mask"]
    completion_mask = losses[0]["completion_mask"]
    for row, mask in enumerate(out["env_mask"]):
        assert tool_mask[row, : len(mask)].tolist() == mask
        weight = (tool_mask[row] * completion_mask[row])[: len(mask)].tolist()
        assert all(w == 0 for w, m in zip(weight, mask, strict=True) if m == 0)

    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    step = next(r for r in rows if "reward" in r)
    for name in ("outcome", "decomposition", "search_count", "format"):
        assert f"rewards/{name}/mean" in step
    assert "rollout/search_rounds" in step
    assert (folder / "model.safetensors").is_file()
    assert folder_prompt_style(folder) == "raw"
    assert (tmp_path / "run" / "reward_curve.png").stat().st_size > 0


def test_rollouts_decode_correctly_under_gradient_checkpointing() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_parallel.models.embedded import embedded_model_dir
    from langgraph_parallel.prompts import few_shot_prompt
    from langgraph_parallel.train.policy import PolicyChatModel

    path = embedded_model_dir("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    chat = PolicyChatModel(policy=model, tokenizer=tokenizer, temperature=0.0, max_tokens=24)
    prompt = few_shot_prompt("Which magazine was started first, Arthur's or First for Women?", True)
    options = {"stop": ("</search>", "</answer>"), "max_tokens": 24}
    ((expected, _, _),) = chat._generate_batch([prompt], options)

    # What GRPOTrainer hands the rollout: a model in train mode with checkpointing on.
    model.train()
    model.gradient_checkpointing_enable()
    ((got, _, _),) = chat._generate_batch([prompt], options)

    assert got == expected and got.startswith("<think>")
    assert model.training and model.is_gradient_checkpointing  # restored for the loss
