"""SFT against the real things: the SmolLM2 tokenizer, TRL's SFTTrainer, PEFT, the engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.models.adapters import (
    ADAPTER_CARD_KEYS,
    merged_model_dir,
    read_card,
)
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS, embedded_model_dir
from langgraph_parallel.paths import repo_data_dir
from tests.conftest import SHARED_DATA

needs_shared = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data")


@needs_shared
def test_transcript_ids_are_the_engine_ids_and_the_mask_covers_exactly_the_steps(
    hotpot_index: object,
) -> None:
    from transformers import AutoTokenizer

    from langgraph_parallel.train.encode import encode_transcript
    from langgraph_parallel.train.gold import gold_questions
    from langgraph_parallel.train.synth import synthesize

    golds = list(gold_questions(SHARED_DATA / "hotpotqa_dev_distractor_subset.jsonl.gz"))
    comparisons = [g for g in golds if g.question_class == "parallelizable"][:8]
    # Some are dropped (a gold paragraph not retrieved); most are kept.
    record = synthesize(comparisons, "parallel", hotpot_index)[0]
    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir("smollm2"))
    ids, mask = encode_transcript(record["messages"], tokenizer)
    text = "".join(m["content"] for m in record["messages"])
    # ChatVLLM in raw style sends tokenizer.encode(text): the trained ids are the served ids.
    assert ids == tokenizer.encode(text, add_special_tokens=False)
    steps = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
    learned = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert learned.replace(" ", "") == "".join(steps).replace(" ", "")
    assert "##" in steps[0]
    # --loss-steps last: the same ids, the mask on the answering step alone.
    last_ids, last_mask = encode_transcript(record["messages"], tokenizer, last_step_only=True)
    assert last_ids == ids and len(steps) > 1
    answered = tokenizer.decode([t for t, m in zip(ids, last_mask, strict=True) if m])
    assert answered.replace(" ", "") == steps[-1].replace(" ", "")
    assert "<answer>" in answered and "##" not in answered


TINY_RUN: dict[str, Any] = {
    "policies": ("parallel",),
    "per_class": 1,
    "batch_size": 2,
    "micro_batch": 2,
    "max_turns": 3,
    "warmup_steps": 0,  # one step: with a warm-up its learning rate would be 0
}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of one tiny ``train sft`` (synthesis and training in one go)."""
    from langgraph_parallel.train.sft import SFTRunConfig, sft

    out = tmp_path_factory.mktemp("sft") / "run"
    sft(SFTRunConfig(out=str(out), **TINY_RUN), command="test")
    return out


@needs_shared
def test_sft_writes_an_adapter_that_merges_into_the_model_it_trained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_run: Path
) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folders = {"parallel": one_run / "parallel"}
    adapter = folders["parallel"]
    card = read_card(adapter)
    assert set(ADAPTER_CARD_KEYS) <= set(card)
    assert card["raw_prompt"] == "rules" and card["policy"] == "parallel"
    assert card["passage_sentences"] is None  # synthesised on whole passages: served so
    held_out = _sample_ids()
    assert set(card["excluded"]["ids"]) == held_out
    trained = [json.loads(line)["id"] for line in (one_run / "data.jsonl").open()]
    assert trained and not held_out & set(trained)
    assert card["train"]["optimizer_steps"] >= 1
    # The card says which questions trained it, on which code and machine, and for how long.
    assert card["data"]["ids"] == sorted(set(trained))
    assert card["train"]["machine"]["cpu"] and card["train"]["machine"]["cores"] >= 1
    assert len(card["train"]["commit"].removesuffix("-dirty")) == 40
    assert card["train"]["train_s"] > 0
    # Nothing of this machine's layout ships: paths relative to the checkout, the base by name.
    assert card["excluded"]["files"] == ["data/hotpotqa_dev_sample300.jsonl.gz"]
    assert card["data"]["files"] == ["../shared/data/hotpotqa_dev_distractor_subset.jsonl.gz"]
    adapter_config = json.loads((adapter / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == "smollm2"
    assert not (adapter / "README.md").exists()

    base = embedded_model_dir("smollm2")
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    merged = merged_model_dir(adapter, base, "t")
    assert merged.is_relative_to(tmp_path / "cache")
    assert merged_model_dir(adapter, base, "t") == merged  # cached by the adapter's hash
    assert read_card(merged)["raw_prompt"] == "rules"

    tokenizer = AutoTokenizer.from_pretrained(merged)
    batch = tokenizer("Question: who directed Ed Wood?\n", return_tensors="pt")
    with torch.no_grad():
        plain = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        peft = PeftModel.from_pretrained(plain, str(adapter)).eval()
        want = peft(**batch).logits
        got = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32)(**batch).logits
        with peft.disable_adapter():
            before = peft(**batch).logits
    assert torch.allclose(got, want, atol=1e-3)
    assert not torch.allclose(got, before, atol=1e-3)  # the adapter changed the model


def test_shipped_policies_have_complete_cards() -> None:
    for name in ("smollm2-parallel", "smollm2-sequential"):
        spec = EMBEDDED_MODELS[name]
        assert spec.adapter is not None
        folder = ADAPTERS_DIR / spec.adapter
        card = read_card(folder)
        assert set(ADAPTER_CARD_KEYS) <= set(card)
        assert card["base_model"] == "smollm2" and card["raw_prompt"] == "rules"
        # Never trained on the evaluation sample that the benchmarks and README figures use.
        assert _sample_ids() <= set(card["excluded"]["ids"])


@pytest.mark.engine
def test_the_engine_serves_the_merged_policy_and_prompts_it_with_the_rules() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.prompts import rules_prompt

    model = ChatVLLM(model="smollm2-parallel", max_tokens=24)
    assert model.prompt_kind == "rules" and model.style == "raw"
    prompt = rules_prompt("Were Scott Derrickson and Ed Wood of the same nationality?", True)
    served = model.invoke(prompt)
    assert served.usage_metadata is not None
    folder = embedded_model_dir("smollm2-parallel")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    assert served.usage_metadata["input_tokens"] == ids.shape[1]
    with torch.no_grad():
        merged = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        out = merged.generate(ids, max_new_tokens=24, do_sample=False)
    # Greedy decoding of the engine and of transformers on the merged folder agree: the engine
    # runs the merged weights, not the base.
    expected = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    assert str(served.content).strip() == expected.strip()


def _sample_ids() -> set[str]:
    from langgraph_parallel.jsonl import read_rows

    return {
        str(row["id"]) for row in read_rows(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    }


@needs_shared
def test_training_from_the_synthesised_file_gives_the_adapter_of_one_run(
    tmp_path: Path, one_run: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    from langgraph_parallel.train.sft import SFTRunConfig, sft, synthesize_run

    data = synthesize_run(SFTRunConfig(out=str(tmp_path / "s"), **TINY_RUN), command="synth")
    # The same questions, settings and seed as one_run: the same bytes.
    assert data.read_bytes() == (one_run / "data.jsonl").read_bytes()
    from_file = sft(SFTRunConfig(out=str(tmp_path / "b"), data=str(data), **TINY_RUN), command="b")[
        "parallel"
    ]
    want = load_file(str(one_run / "parallel" / "adapter_model.safetensors"))
    got = load_file(str(from_file / "adapter_model.safetensors"))
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)
    card_a, card_b = read_card(one_run / "parallel"), read_card(from_file)
    assert card_b["data"]["sha256"] == card_a["data"]["sha256"]
    assert card_b["data"]["synthesis_command"] == "synth"
    assert card_b["data"]["files"] == card_a["data"]["files"]
    assert card_b["config"]["per_class"] == 1 and card_b["config"]["data"] == str(data)


@needs_shared
def test_init_keeps_training_the_start_adapter_on_its_base(tmp_path: Path, one_run: Path) -> None:
    import torch
    from safetensors.torch import load_file

    from langgraph_parallel.train.sft import SFTRunConfig, sft

    start = one_run / "parallel"
    config = {**TINY_RUN, "data": str(one_run / "data.jsonl"), "init": str(start)}
    # A zero learning rate leaves the trainable tensors as loaded: exactly the start's adapter
    # (a fresh LoRA would start from zero B matrices and random A ones instead).
    still = sft(SFTRunConfig(out=str(tmp_path / "z"), **config, learning_rate=0.0), command="z")
    # The command's --lora-rank gives way to the start adapter's rank (and its base to --model).
    moved = sft(SFTRunConfig(out=str(tmp_path / "m"), **config, lora_rank=4), command="m")
    want = load_file(str(start / "adapter_model.safetensors"))
    kept = load_file(str(still["parallel"] / "adapter_model.safetensors"))
    trained = load_file(str(moved["parallel"] / "adapter_model.safetensors"))
    assert want.keys() == kept.keys() == trained.keys()
    assert all(torch.equal(want[k], kept[k]) for k in want)
    assert not all(torch.equal(want[k], trained[k]) for k in want)
    card, start_card = read_card(moved["parallel"]), read_card(start)
    assert card["base_model"] == "smollm2" and card["policy"] == "parallel"
    assert card["config"]["model"] == "smollm2"
    assert card["config"]["lora_rank"] == start_card["config"]["lora_rank"] == 16
    assert card["init"]["command"] == start_card["command"] == "test"
    assert set(card["excluded"]["ids"]) >= set(start_card["excluded"]["ids"])
