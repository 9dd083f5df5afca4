"""GRPO's pieces for a lent GPU, without a trainer: exact batching, think statistics, the chain."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.train.batcher import Batcher
from langgraph_parallel.train.grpo_chain import ChainCheckpoints, plan_piece, run_settings
from langgraph_parallel.train.grpo_config import TrainConfig
from langgraph_parallel.train.resume import RunRecord
from langgraph_parallel.train.rollout import canonical_order
from langgraph_parallel.train.think_stats import copied_share, think_metrics, think_texts


def test_exact_batches_hold_one_request_of_every_live_caller_in_prompt_order() -> None:
    batches: list[list[str]] = []

    def run(prompts: list[str], options: dict[str, Any]) -> list[str]:
        batches.append(list(prompts))
        return [p.upper() for p in prompts]

    # A tiny window: in window mode the late caller would miss the first batch.
    batcher = Batcher(run, window=0.001)
    batcher.expect(3, exact=True)

    def caller(prompt: str, delay: float, again: bool) -> None:
        time.sleep(delay)
        batcher.submit(prompt, {})
        if again:
            batcher.submit(prompt + "2", {})
        batcher.finished()

    threads = [
        threading.Thread(target=caller, args=("c", 0.0, True)),
        threading.Thread(target=caller, args=("a", 0.3, False)),  # late, still waited for
        threading.Thread(target=caller, args=("b", 0.1, True)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    # The second round waits for "b2" and "c2" only: "a" finished after its first request.
    assert batches == [["a", "b", "c"], ["b2", "c2"]]


def test_canonical_order_sorts_each_group_by_its_completion() -> None:
    class Tok:
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [ord(c) for c in text]

    def state(text: str) -> dict[str, Any]:
        prompt = SimpleNamespace(content="Q", type="human")
        return {"transcript": [prompt, SimpleNamespace(content=text, type="ai")]}

    prompts = ["p", "p", "q", "q", "q"]
    states = [state(t) for t in ("z", "a", "m", "c", "b")]
    ordered = canonical_order(prompts, states, Tok())
    assert [s["transcript"][1].content for s in ordered] == ["a", "z", "b", "c", "m"]


def test_think_statistics_measure_length_and_copying() -> None:
    fact = "Ed Wood was an American filmmaker and actor."
    passage = f"<information>Doc 1 (Title: Ed Wood) {fact}</information>"
    copied = "<think>Ed Wood was an American filmmaker and actor.</think><answer>yes</answer>"
    own = "<think>both are from the same country so the answer is yes</think><answer>yes</answer>"
    assert think_texts([copied, "<search>x</search>"]) == [
        "Ed Wood was an American filmmaker and actor."
    ]
    assert copied_share("Ed Wood was an American filmmaker and actor.", passage) == 1.0
    assert copied_share("too short", passage) is None
    metrics = think_metrics([[copied], [own, "<search>x</search>"]], [passage, passage])
    assert metrics["think/copied"] == pytest.approx(0.5)  # one pasted think, one of its own
    assert metrics["think/words"] == pytest.approx((8 + 11) / 2)
    assert metrics["think/missing"] == pytest.approx(1 / 3)


def _run_piece(chain: ChainCheckpoints, step_s: float, steps: int = 40) -> list[Any]:
    """Run steps of ``step_s`` seconds through ``chain`` until it stops; their controls."""
    state = SimpleNamespace(global_step=0, max_steps=100)
    stops = []
    for _ in range(steps):
        chain.on_step_begin(None, state, None)
        time.sleep(step_s)
        state.global_step += 1
        control = SimpleNamespace(should_save=False, should_training_stop=False)
        chain.on_step_end(None, state, control)
        stops.append((control.should_save, control.should_training_stop))
        if control.should_training_stop:
            break
    return stops


def test_chain_checkpoints_stop_a_piece_before_its_budget_runs_out() -> None:
    stops = _run_piece(ChainCheckpoints(budget_s=0.25), 0.05)
    # About 0.05 s a step: the piece ends at step 4 (0.2 s + one more would pass 0.25 s).
    assert stops[-1] == (True, True) and 3 <= len(stops) <= 5


def test_chain_budget_counts_the_dev_pass_once_not_as_a_step() -> None:
    chain = ChainCheckpoints(budget_s=0.6)
    time.sleep(0.3)  # the dev pass before the first step
    stops = _run_piece(chain, 0.01)
    # 0.3 s spent, then 0.01 s steps: about 29 fit (5 even if a step takes 0.05 s). Timing
    # the first step from the start of the piece (0.31 s "a step") stopped the H200 piece
    # early: one step here.
    assert len(stops) >= 5 and chain.stopped_by_budget
    # A dev pass due after a step is counted before the next step is allowed.
    dev_every_2 = ChainCheckpoints(budget_s=0.6, after=lambda step: 0.1 * (step % 2 == 0))
    assert len(_run_piece(dev_every_2, 0.03)) < len(_run_piece(ChainCheckpoints(0.6), 0.03))


def test_chain_checkpoints_save_every_n_steps_and_at_the_last() -> None:
    chain = ChainCheckpoints(budget_s=None, save_steps=3)
    state = SimpleNamespace(global_step=0, max_steps=7)
    saved = []
    for _ in range(7):
        state.global_step += 1
        control = SimpleNamespace(should_save=False, should_training_stop=False)
        chain.on_step_end(None, state, control)
        if control.should_save:
            saved.append(state.global_step)
    assert saved == [3, 6, 7]


def _checkpoint(folder: Path, sha256: str, settings: dict[str, Any]) -> Path:
    checkpoint = folder / "trainer" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    record = RunRecord(sha256, settings, train_s=12.5, resumed=0).state()
    state = {"global_step": 4, "stateful_callbacks": {"RunRecord": record}}
    (checkpoint / "trainer_state.json").write_text(json.dumps(state))
    return checkpoint


def test_a_piece_resumes_its_run_and_refuses_another(tmp_path: Path) -> None:
    config = TrainConfig(dataset="d.jsonl", out=str(tmp_path), resume=True, steps=40)
    assert plan_piece(config, "abc").checkpoint is None  # nothing to resume yet: from the start
    checkpoint = _checkpoint(tmp_path, "abc", run_settings(config))
    start = plan_piece(config, "abc")
    assert start.checkpoint == checkpoint and start.resumed == 1
    assert start.train_s == pytest.approx(12.5, abs=0.1)
    with pytest.raises(UserError, match="other questions.*--dataset"):
        plan_piece(config, "other")
    changed = TrainConfig(dataset="d.jsonl", out=str(tmp_path), resume=True, steps=40, group_size=8)
    with pytest.raises(UserError, match="group_size=4.*group_size=8"):
        plan_piece(changed, "abc")
    fresh = TrainConfig(dataset="d.jsonl", out=str(tmp_path), steps=40)
    with pytest.raises(UserError, match="add --resume"):
        plan_piece(fresh, "abc")


def test_the_grpo_dev_split_is_held_out_from_the_evaluation_and_the_readme_question() -> None:
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.paths import repo_data_dir
    from langgraph_parallel.train.questions import names_readme_entity

    dev = load_questions(str(repo_data_dir() / "grpo_dev64.jsonl.gz"))
    sample = load_questions(str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"))
    assert not {q.id for q in dev} & {q.id for q in sample}
    assert not any(names_readme_entity(q.question, *q.supporting_titles) for q in dev)
    classes = [q.question_class for q in dev]
    assert classes.count("parallelizable") == classes.count("sequential") == 32
