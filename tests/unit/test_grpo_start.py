"""Where GRPO starts (which adapter it keeps training) and the card of the adapter it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_parallel.models.adapters import ADAPTER_CARD_KEYS, MODEL_CARD
from langgraph_parallel.models.embedded import ADAPTERS_DIR
from langgraph_parallel.train.start import adapter_card, save_adapter, start_adapter


def _adapter(folder: Path, card: dict[str, object]) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / MODEL_CARD).write_text(json.dumps(card))
    return folder


def test_an_embedded_policy_starts_from_its_shipped_adapter() -> None:
    assert start_adapter("smollm2-parallel") == ADAPTERS_DIR / "smollm2-parallel"
    assert start_adapter("smollm2-sequential") == ADAPTERS_DIR / "smollm2-sequential"


def test_a_plain_model_has_no_adapter_to_continue(tmp_path: Path) -> None:
    assert start_adapter("smollm2") is None
    (tmp_path / "config.json").write_text("{}")
    assert start_adapter(str(tmp_path)) is None


def test_an_adapter_folder_is_its_own_start(tmp_path: Path) -> None:
    folder = _adapter(tmp_path / "sft" / "parallel", {"base_model": "smollm2"})
    assert start_adapter(str(folder)) == folder


def test_card_of_an_adapter_start_keeps_its_base_policy_and_held_out_ids(tmp_path: Path) -> None:
    init = {
        "base_model": "smollm2",
        "policy": "parallel",
        "method": "LoRA SFT",
        "command": "langgraph-parallel train sft --out x",
        "data": {"trajectories": 3},
        "excluded": {"files": ["data/eval.jsonl"], "ids": ["a", "b"]},
    }
    folder = _adapter(tmp_path / "parallel", init)
    card = adapter_card(
        str(folder),
        raw_prompt="rules",
        command="langgraph-parallel train grpo --lora",
        data={"files": ["train.jsonl"], "questions": 30},
        excluded={"files": ["data/eval.jsonl"], "ids": ["b", "c"]},
    )
    assert set(ADAPTER_CARD_KEYS) <= set(card)
    assert card["base_model"] == "smollm2"  # the adapter is the base's, not the merged start's
    assert card["policy"] == "parallel"
    assert card["raw_prompt"] == "rules"
    assert card["excluded"]["ids"] == ["a", "b", "c"]  # every id either stage held out
    assert card["init"] == {k: init[k] for k in ("method", "command", "data")}
    assert card["trained_from"] == str(folder)


def test_card_of_a_plain_embedded_start_names_it_as_the_base() -> None:
    card = adapter_card(
        "smollm2", raw_prompt="few_shot", command="c", data={}, excluded={"files": [], "ids": []}
    )
    assert card["base_model"] == "smollm2" and "init" not in card


def test_a_model_without_an_adapter_writes_none(tmp_path: Path) -> None:
    assert save_adapter(object(), tmp_path / "adapter", {}) is None
    assert not (tmp_path / "adapter").exists()


def test_an_incomplete_card_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    class Peft:
        peft_config: dict[str, object] = {}

    with pytest.raises(ValueError, match="base_model"):
        save_adapter(Peft(), tmp_path / "adapter", {"command": "c"})
    assert not (tmp_path / "adapter").exists()
