"""GRPO against the real things: TRL's GRPOTrainer, the embedded SmolLM2, the bundled index."""

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


def test_lora_grpo_run_writes_a_shippable_adapter_of_the_base(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from langgraph_parallel.models.adapters import read_card
    from langgraph_parallel.models.embedded import ADAPTERS_DIR
    from langgraph_parallel.models.folders import resolve_model
    from langgraph_parallel.train.grpo import TrainConfig, train

    config = TrainConfig(
        dataset=str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
        exclude=None,
        out=str(tmp_path / "run"),
        model="smollm2-parallel",
        lora=True,
        steps=1,
        group_size=2,
        micro_batch=1,  # the step's two rollouts: one generation, two accumulated backwards
        limit=2,
        max_turns=1,
        max_tokens=24,
        top_k=1,
    )
    train(config, command="test")

    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "reward" in r] == [1]  # one optimizer step
    adapter = tmp_path / "run" / "adapter"
    shipped = load_file(str(ADAPTERS_DIR / "smollm2-parallel" / "adapter_model.safetensors"))
    trained = load_file(str(adapter / "adapter_model.safetensors"))
    # The shipped SFT adapter's tensors (its rank, its modules), not a second LoRA stacked on
    # the merged weights.
    assert trained.keys() == shipped.keys()
    assert all(trained[k].shape == shipped[k].shape for k in shipped)
    card = read_card(adapter)
    assert card["base_model"] == "smollm2" and card["raw_prompt"] == "rules"
    assert "train sft" in card["init"]["command"]
    # It loads like any adapter folder: merged into its base, prompted as the card says.
    folder, style = resolve_model(str(adapter))
    assert style == "raw" and (Path(folder) / "model.safetensors").is_file()


def test_lora_start_trains_exactly_the_sft_adapter(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from langgraph_parallel.models.embedded import ADAPTERS_DIR, embedded_model_dir
    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.train.start import adapter_card, load_policy, save_adapter

    model, peft_config = load_policy("smollm2-parallel", lora=True, dtype=torch.float32)
    assert peft_config is None  # the model already carries its adapter
    shipped = load_file(str(ADAPTERS_DIR / "smollm2-parallel" / "adapter_model.safetensors"))
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert len(trainable) == len(shipped)
    for name, param in trainable.items():
        key = name.replace(".default", "")
        assert torch.equal(param.detach(), shipped[key].float())  # starts at the SFT weights

    # The policy the trainer starts from answers like the merged SFT folder ask/bench use.
    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir("smollm2"))
    ids = tokenizer("Question: Who wrote Hamlet?", return_tensors="pt")
    merged = type(model.get_base_model()).from_pretrained(model_folder("smollm2-parallel"))
    with torch.no_grad():
        expected = merged(**ids).logits
        got = model(**ids).logits
    assert torch.allclose(got, expected, atol=1e-3)

    optimizer = torch.optim.SGD(list(trainable.values()), lr=1.0)
    model(**ids, labels=ids["input_ids"]).loss.backward()
    optimizer.step()
    card = adapter_card(
        "smollm2-parallel",
        raw_prompt="rules",
        command="test",
        data={},
        excluded={"files": [], "ids": []},
    )
    written = save_adapter(model, tmp_path / "adapter", card)
    assert written is not None
    trained = load_file(str(written / "adapter_model.safetensors"))
    assert any(not torch.equal(trained[k], shipped[k]) for k in shipped)


def test_a_grpo_run_cut_by_its_time_budget_and_resumed_equals_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    from safetensors.torch import load_file

    from langgraph_parallel.models.embedded import ADAPTERS_DIR
    from langgraph_parallel.rewards import RewardConfig
    from langgraph_parallel.train.grpo import TrainConfig, train

    def config(out: str, **extra: Any) -> TrainConfig:
        return TrainConfig(
            dataset=str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
            exclude=None,
            out=str(tmp_path / out),
            model="smollm2-parallel",
            lora=True,
            steps=2,
            group_size=2,
            micro_batch=1,
            learning_rate=1e-3,  # large enough that a different second step shows
            limit=2,
            max_turns=2,
            max_tokens=64,
            top_k=1,
            # Ungated terms: rollouts that search differently score differently, so the group
            # has an advantage to learn from even where no rollout of a tiny run answers.
            reward=RewardConfig(require_answer=False),
            merge=False,
            **extra,
        )

    train(config("whole"))
    train(config("pieces", time_budget_s=1e-3))  # the budget ends the piece after step 1
    first = json.loads((tmp_path / "pieces" / "adapter" / "langgraph_parallel.json").read_text())
    assert first["train"]["step"] == 1
    assert [p.name for p in (tmp_path / "pieces" / "trainer").glob("checkpoint-*")] == [
        "checkpoint-1"
    ]
    train(config("pieces", resume=True))

    whole = load_file(str(tmp_path / "whole" / "adapter" / "adapter_model.safetensors"))
    pieces = load_file(str(tmp_path / "pieces" / "adapter" / "adapter_model.safetensors"))
    shipped = load_file(str(ADAPTERS_DIR / "smollm2-parallel" / "adapter_model.safetensors"))
    assert any(not whole[k].equal(shipped[k]) for k in whole)  # two steps moved the weights
    assert all(whole[k].equal(pieces[k]) for k in whole)
    card = json.loads((tmp_path / "pieces" / "adapter" / "langgraph_parallel.json").read_text())
    assert card["train"]["step"] == 2 and card["train"]["resumed"] == 1

    def rewards(run: str) -> list[Any]:
        lines = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        return [(r["step"], r["reward"]) for r in map(json.loads, lines) if "reward" in r]

    assert rewards("pieces") == rewards("whole") and len(rewards("whole")) == 2


def test_merged_and_static_decoding_match_plain_and_leave_the_base_weights_bit_equal() -> None:
    import torch
    from transformers import AutoTokenizer

    from langgraph_parallel.models.folders import model_folder
    from langgraph_parallel.prompts import raw_prompt
    from langgraph_parallel.train.policy import PolicyChatModel
    from langgraph_parallel.train.start import load_policy

    model, _ = load_policy("smollm2-parallel", lora=True, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(model_folder("smollm2-parallel"))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    prompts = [
        raw_prompt(q, True, "rules")
        for q in ("Which magazine was started first, Arthur's or First for Women?", "Who is older?")
    ]
    options = {"stop": ("</search>", "</answer>"), "max_tokens": 24}
    texts = {}
    for mode in ("plain", "merged", "static"):
        chat = PolicyChatModel(
            policy=model,
            tokenizer=tokenizer,
            temperature=0.0,
            max_tokens=24,
            decoding=mode,
            static_shape=(3, 160),  # a padding row and padding tokens on every prompt
        )
        texts[mode] = [text for text, _, _ in chat._generate_batch(prompts, options)]
        # And as the graph calls it: through LangChain's invoke.
        reply = chat.invoke(prompts[0], stop=list(options["stop"]))
        assert reply.content == texts[mode][0]

        assert "static_misses" not in chat.timings()

    assert texts["merged"] == texts["plain"] == texts["static"]
    # A batch that does not fit the shape decodes merged, and says so.
    small = PolicyChatModel(
        policy=model, tokenizer=tokenizer, temperature=0.0, decoding="static", static_shape=(1, 160)
    )
    assert [t for t, _, _ in small._generate_batch(prompts, options)] == texts["plain"]
    assert small.timings()["static_misses"] == 1
    assert texts["plain"][0].startswith("<think>")
    after = model.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)  # no merge residue
    assert not any(getattr(m, "merged", False) for m in model.modules())
