"""GRPO pieces without a trainer: token masking, the rollout function, reward logging, batching."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import MODEL_CARD
from langgraph_parallel.models.folders import folder_prompt_style
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.prompts import few_shot_prompt
from langgraph_parallel.protocol import INVALID_ACTION_OBSERVATION
from langgraph_parallel.train.batcher import Batcher
from langgraph_parallel.train.grpo import TrainConfig
from langgraph_parallel.train.grpo_rewards import reward_functions
from langgraph_parallel.train.policy import cut_at_stop
from langgraph_parallel.train.rollout import GraphRollout, completion_tokens
from tests.fakes import CountingSearcher


class CharTokenizer:
    """One token per character, so token positions equal character positions."""

    eos_token_id = 0

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


class TwoStepModel(OneReplyChatModel):
    """Searches two sub-queries on its first step, answers on the second."""

    def respond(self, messages: list[BaseMessage], stop: Any, **_: Any) -> str:
        done = any(isinstance(m, AIMessage) for m in messages)
        return (
            "<think>found it</think>\n<answer> Paris </answer>"
            if done
            else "<think>two</think>\n<search> capital of France ## capital of Spain </search>"
        )


def test_environment_tokens_have_zero_loss_weight() -> None:
    step1 = "<think>a</think><search> q </search>"
    observation = "\n\n<information>[q]\nDoc 1(Title: T) text</information>\n\n"
    step2 = "bad step"
    step3 = "<think>b</think><answer> x </answer>"
    messages = [
        HumanMessage("PROMPT"),
        AIMessage(step1),
        HumanMessage(observation),
        AIMessage(step2),
        HumanMessage(INVALID_ACTION_OBSERVATION),
        AIMessage(step3),
    ]
    ids, mask, steps = completion_tokens(messages, CharTokenizer())
    text = "".join(chr(i) for i in ids)
    assert text == step1 + observation + step2 + INVALID_ACTION_OBSERVATION + step3
    assert steps == [step1, step2, step3]
    model_chars = "".join(c for c, m in zip(text, mask, strict=True) if m)
    env_chars = "".join(c for c, m in zip(text, mask, strict=True) if not m)
    assert model_chars == step1 + step2 + step3
    assert env_chars == observation + INVALID_ACTION_OBSERVATION


def test_graph_rollout_returns_what_trl_needs() -> None:
    questions = ["What is the capital of France?", "Which is bigger, Paris or Madrid?"]
    prompts = {few_shot_prompt(q, True): q for q in questions}
    searcher = CountingSearcher()
    rollout = GraphRollout(prompts, searcher, max_turns=3, top_k=1)
    rollout.policy_model = lambda trainer: TwoStepModel()  # type: ignore[method-assign]
    trainer = SimpleNamespace(processing_class=CharTokenizer())
    batch = [p for p in prompts for _ in range(2)]  # TRL repeats each prompt per generation

    out = rollout(batch, trainer)

    assert out["logprobs"] is None
    assert len(out["prompt_ids"]) == len(out["completion_ids"]) == len(out["env_mask"]) == 4
    for prompt, prompt_ids, ids, mask, steps in zip(
        batch, out["prompt_ids"], out["completion_ids"], out["env_mask"], out["steps"], strict=True
    ):
        # The prompt TRL sees is exactly the graph's first prompt; the completion follows it.
        assert "".join(chr(i) for i in prompt_ids) == prompt
        assert len(ids) == len(mask)
        assert len(steps) == 2 and "##" in steps[0]
        assert sum(mask) == sum(len(s) for s in steps)
        completion = "".join(chr(i) for i in ids)
        assert "<information>" in completion and "[capital of Spain]" in completion
    assert len(searcher.queries) == 8  # 4 rollouts x 2 sub-queries, searched by the fan-out
    assert all("<information>" in seen for seen in out["observations"])
    assert out["timing"][0]["rollout_s"] > 0 and len(out["timing"]) == 4


class BrokenModel(TwoStepModel):
    """Fails every call, as a policy wrapper with a bug does."""

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise TypeError("'str' object is not callable")


def test_graph_rollout_refuses_to_train_on_failed_model_calls() -> None:
    question = "What is the capital of France?"
    prompts = {few_shot_prompt(question, True): question}
    rollout = GraphRollout(prompts, CountingSearcher(), max_turns=2, top_k=1)
    rollout.policy_model = lambda trainer: BrokenModel()  # type: ignore[method-assign]
    trainer = SimpleNamespace(processing_class=CharTokenizer())

    # The graph ends each rollout with a model_error; a training step must not go on with it.
    with pytest.raises(RuntimeError, match="2 of 2 rollouts failed: model_error.*not callable"):
        rollout(list(prompts) * 2, trainer)


def test_reward_functions_score_and_log() -> None:
    functions = reward_functions(TrainConfig(dataset="x", out="y").reward)
    assert [f.__name__ for f in functions] == ["outcome", "decomposition", "search_count", "format"]
    steps = [
        ["<think>t</think><search> a ## b </search>", "<think>t</think><answer> Paris </answer>"],
        ["<think>t</think><search> a </search>", "<think>t</think><answer> Rome </answer>"],
    ]
    logged: dict[str, float] = {}
    kwargs = {
        "completions": ["", ""],
        "steps": steps,
        "answers": [["Paris"], ["Paris"]],
        "question_class": ["parallelizable", "sequential"],
    }
    outcome = functions[0](**kwargs, log_metric=logged.__setitem__)
    assert outcome == [1.0, 0.1]
    assert functions[1](**kwargs) == pytest.approx([0.15, 0.05])
    assert logged["rollout/decomposition_rate/parallelizable"] == 1.0
    assert logged["rollout/decomposition_rate/sequential"] == 0.0
    assert logged["rollout/em"] == 0.5 and logged["rollout/search_rounds"] == 1.0
    assert "think/words" not in logged and "time/rollout_s" not in logged  # not given: not logged

    seen = ["<information>a</information>", "<information>b</information>"]
    timing = [{"rollout_s": 3.0, "generate_s": 2.5}] * 2
    functions[0](**kwargs, observations=seen, timing=timing, log_metric=logged.__setitem__)
    assert logged["think/words"] == 1.0 and logged["think/missing"] == 0.0
    assert logged["time/rollout_s"] == 3.0 and logged["time/generate_s"] == 2.5


def test_batcher_runs_concurrent_calls_as_one_batch() -> None:
    sizes: list[int] = []

    def run(prompts: list[str], options: dict[str, Any]) -> list[str]:
        sizes.append(len(prompts))
        return [p.upper() for p in prompts]

    batcher = Batcher(run, window=5.0)
    batcher.expected = 4
    results: dict[str, str] = {}
    threads = [
        threading.Thread(target=lambda p=p: results.update({p: batcher.submit(p, {"k": 1})}))
        for p in "abcd"
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {"a": "A", "b": "B", "c": "C", "d": "D"}
    assert sizes == [4]


def test_batcher_reports_a_failure_to_every_caller() -> None:
    batches: list[list[str]] = []

    def run(prompts: list[str], options: dict[str, Any]) -> list[str]:
        batches.append(prompts)
        raise RuntimeError("context too long")

    batcher = Batcher(run, window=5.0)
    batcher.expected = 3
    errors: dict[str, str] = {}

    def call(prompt: str) -> None:
        try:
            batcher.submit(prompt, {})
        except RuntimeError as exc:
            errors[prompt] = str(exc)

    threads = [threading.Thread(target=call, args=(p,)) for p in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(batches) == 1 and sorted(batches[0]) == ["a", "b", "c"]  # one failing batch
    assert errors == {p: "context too long" for p in "abc"}


def test_cut_at_stop_keeps_the_first_stop_sequence() -> None:
    stops = ["</search>", "</answer>"]
    assert cut_at_stop("<search> a </search> more <answer>", stops) == "<search> a </search>"
    assert cut_at_stop("no stop here", stops) == "no stop here"


def test_trained_model_card_sets_the_prompt_style(tmp_path: Path) -> None:
    assert folder_prompt_style(tmp_path) == "chat"
    (tmp_path / MODEL_CARD).write_text(json.dumps({"prompt_style": "raw"}))
    assert folder_prompt_style(tmp_path) == "raw"


def test_train_config_rejects_settings_that_cannot_work() -> None:
    with pytest.raises(UserError, match="group-size"):
        TrainConfig(dataset="d", out="o", group_size=1)
    with pytest.raises(UserError, match="steps"):
        TrainConfig(dataset="d", out="o", steps=0)
    with pytest.raises(UserError, match="micro-batch must divide the 8 rollouts"):
        TrainConfig(dataset="d", out="o", group_size=4, questions_per_step=2, micro_batch=3)
    with pytest.raises(UserError, match="micro-batch"):
        TrainConfig(dataset="d", out="o", micro_batch=0)
    assert TrainConfig(dataset="d", out="o", group_size=4, micro_batch=2).micro_batch == 2


def test_reward_curve_shows_components_and_decomposition_by_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    from langgraph_parallel.train.reward_curve import plot_rewards

    rows = []
    for step in range(1, 7):
        qclass = "parallelizable" if step % 2 else "sequential"
        rows.append(
            {
                "step": step,
                "reward": 0.5,
                **{f"rewards/{c}/mean": 0.1 for c in ("outcome", "decomposition")},
                "rollout/em": 0.25,
                "rollout/valid_format": 0.75,
                f"rollout/decomposition_rate/{qclass}": step / 10,
            }
        )
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"train_loss": 1.0}\n')
    figures: list[Figure] = []
    real_savefig = Figure.savefig
    monkeypatch.setattr(
        Figure, "savefig", lambda self, *a, **k: (figures.append(self), real_savefig(self, *a, **k))
    )
    plot_rewards(log, tmp_path / "curve.png", window=2)

    assert (tmp_path / "curve.png").stat().st_size > 0
    top, bottom = figures[0].axes
    labels = [text.get_text() for text in top.get_legend().get_texts()]
    assert labels[:3] == ["total (mean of 2)", "outcome (mean of 2)", "decomposition (mean of 2)"]
    lines = {line.get_label(): line for line in bottom.get_lines()}
    parallel = lines["decomposed, parallelizable (mean of 2)"]
    # Only the steps that had a comparison question, averaged over the last two of them.
    assert list(parallel.get_xdata()) == [1, 3, 5]
    assert list(parallel.get_ydata()) == pytest.approx([0.1, 0.2, 0.4])
    assert list(lines["decomposed, sequential (mean of 2)"].get_xdata()) == [2, 4, 6]
    assert "EM (mean of 2)" in lines and "valid format (mean of 2)" in lines
