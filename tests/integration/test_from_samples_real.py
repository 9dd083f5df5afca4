"""Training on scored samples against the real things: SmolLM2's tokenizer, TRL's DPO and SFT.

A ``train sample`` folder is written by hand (two questions, a right and a wrong sample each,
short transcripts in the graph's dialect) so the trainers run in seconds; ``train sample``
itself runs on the engine in ``test_train_sample_real.py``.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.models.adapters import read_card
from langgraph_parallel.models.embedded import ADAPTERS_DIR, EMBEDDED_MODELS, embedded_model_dir

RULES = "Answer each question. Give the final answer inside <answer> </answer>.\nQuestion: "


def _sample(qid: str, k: int, question: str, steps: list[str], answer: str, right: bool) -> dict:
    messages = [{"role": "user", "content": f"{RULES}{question}\n"}]
    for i, step in enumerate(steps):
        messages.append({"role": "assistant", "content": step})
        if i < len(steps) - 1:
            messages.append(
                {"role": "user", "content": "\n\n<information>Doc 1 text.</information>\n\n"}
            )
    return {
        "id": qid,
        "sample": k,
        "seed": k,
        "part": "hotpotqa",
        "dataset": "hotpotqa",
        "type": "comparison",
        "class": "parallelizable",
        "question": question,
        "answer": answer,
        "reward": {"total": 1.6 if right else 0.7},
        "correct": right,
        "decomposed": True,
        "llm_calls": len(steps),
        "completion_tokens": 30,
        "messages": messages,
        "error": None,
    }


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "samples"
    out.mkdir()
    search = "<think> two people </think>\n<search> Ann Lee ## Bo Chan </search>"
    rows = [
        _sample(
            "t1",
            0,
            "Are Ann Lee and Bo Chan both painters?",
            [search, "<answer> yes </answer>"],
            "yes",
            True,
        ),
        _sample(
            "t1",
            1,
            "Are Ann Lee and Bo Chan both painters?",
            [search, "<answer> no </answer>"],
            "no",
            False,
        ),
        _sample(
            "t2", 0, "Were Cy Dorr and Di Eno born in May?", ["<answer> no </answer>"], "no", False
        ),
        _sample(
            "t2",
            1,
            "Were Cy Dorr and Di Eno born in May?",
            [search, "<answer> yes </answer>"],
            "yes",
            True,
        ),
    ]
    with gzip.open(out / "shard-00000.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    run = {
        "settings": {
            "policy": "parallel",
            "model": "smollm2-parallel",
            "max_turns": 4,
            "top_k": 3,
            "seed": 0,
            "temperature": 0.7,
        }
    }
    (out / "run.json").write_text(json.dumps(run))
    return out


def test_the_collator_counts_exactly_the_model_s_steps_of_each_side(folder: Path) -> None:
    from transformers import AutoTokenizer

    from langgraph_parallel.train.dpo import preference_collator, write_pairs

    rows, _ = write_pairs(folder.parent / "o", [str(folder)], "parallel", held_out=set())
    tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir("smollm2"))
    examples = []
    for row in rows:  # split as TRL's DPOTrainer splits: where prompt and prompt+side diverge
        prompt_ids = tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        full = {
            side: tokenizer(row["prompt"] + row[side], add_special_tokens=False)["input_ids"]
            for side in ("chosen", "rejected")
        }
        cut = min(
            next(
                (i for i, (x, y) in enumerate(zip(prompt_ids, ids, strict=False)) if x != y),
                len(prompt_ids),
            )
            for ids in full.values()
        )
        example = {**row, "prompt_ids": prompt_ids[:cut]}
        example.update({f"{side}_ids": ids[cut:] for side, ids in full.items()})
        examples.append(example)
    batch = preference_collator(tokenizer)(examples)
    for i, (side, row) in enumerate([(s, r) for s in ("chosen", "rejected") for r in rows]):
        ids = batch["input_ids"][i][batch["completion_mask"][i].bool()].tolist()
        said = "".join(row[side][a:b] for a, b in row[f"{side}_spans"])
        assert tokenizer.decode(ids).replace(" ", "") == said.replace(" ", "")
        assert "information" not in tokenizer.decode(ids)  # the passages never count


def test_dpo_moves_the_sampled_adapter_and_writes_it_without_its_reference(
    folder: Path, tmp_path: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    from langgraph_parallel.train.dpo import DPORunConfig, dpo

    config = DPORunConfig(
        from_samples=(str(folder),),
        out=str(tmp_path / "dpo"),
        policy="parallel",
        init="smollm2-parallel",
        batch_size=2,
        micro_batch=1,
        warmup_steps=0,
        learning_rate=1e-3,
        save_steps=0,
    )
    adapter = dpo(config, command="test")
    shipped = ADAPTERS_DIR / str(EMBEDDED_MODELS["smollm2-parallel"].adapter)
    start = load_file(str(shipped / "adapter_model.safetensors"))
    moved = load_file(str(adapter / "adapter_model.safetensors"))
    assert start.keys() == moved.keys()  # the policy's adapter alone: no "ref" copy saved
    assert not all(torch.equal(start[k].float(), moved[k].float()) for k in start)
    assert not (adapter / "ref").exists()
    card: dict[str, Any] = read_card(adapter)
    assert card["policy"] == "parallel" and card["base_model"] == "smollm2"
    assert card["method"].startswith("DPO") and card["data"]["pairs"] == 2
    assert card["prompt_style"] == read_card(shipped)["prompt_style"]
    assert card["init"]["command"] == read_card(shipped)["command"]
    assert card["train"]["optimizer_steps"] == 1
    first = json.loads((adapter / "metrics.jsonl").read_text().splitlines()[0])
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-4)  # policy == reference: ln 2


def test_rpo_alpha_adds_the_chosen_side_s_token_nll_to_the_dpo_loss(
    folder: Path, tmp_path: Path
) -> None:
    from langgraph_parallel.train.dpo import DPORunConfig, dpo

    def first_step(alpha: float) -> dict[str, float]:
        config = DPORunConfig(
            from_samples=(str(folder),),
            out=str(tmp_path / f"rpo-{alpha}"),
            policy="parallel",
            init="smollm2-parallel",
            rpo_alpha=alpha,
            batch_size=2,
            warmup_steps=0,
            learning_rate=1e-3,
            save_steps=0,
        )
        adapter = dpo(config, command="test")
        assert read_card(adapter)["config"]["rpo_alpha"] == alpha
        return json.loads((adapter / "metrics.jsonl").read_text().splitlines()[0])

    one, two = first_step(1.0), first_step(2.0)
    # At the first step the policy is its reference: the DPO part is ln 2, the rest alpha * NLL
    nll = one["loss"] - math.log(2)
    assert nll > 0.01
    assert two["loss"] - math.log(2) == pytest.approx(2 * nll, rel=1e-3)


def test_a_negative_rpo_alpha_is_refused_naming_the_setting(folder: Path) -> None:
    from langgraph_parallel.errors import UserError
    from langgraph_parallel.train.dpo import DPORunConfig

    with pytest.raises(UserError, match="--rpo-alpha"):
        DPORunConfig(
            from_samples=(str(folder),),
            out="x",
            policy="parallel",
            init="smollm2-parallel",
            rpo_alpha=-1.0,
        )
