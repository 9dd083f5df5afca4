"""GRPO gold mixing: which groups get the gold trajectory, what TRL receives, what is logged."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.prompts import raw_prompt
from langgraph_parallel.protocol import parse_action
from langgraph_parallel.rewards import RewardConfig, first_search_decomposed
from langgraph_parallel.train.gold_mix import gold_transcripts, mix_gold
from langgraph_parallel.train.grpo_rewards import reward_functions
from langgraph_parallel.train.rollout import GraphRollout, completion_tokens
from tests.unit.test_sft import COMPARISON, TitleSearcher
from tests.unit.test_train import CharTokenizer

SPLIT = "<think>t</think><search> a ## b </search>"
SINGLE = "<think>t</think><search> a </search>"


def encoded(*steps: str) -> tuple[list[int], list[int], list[str]]:
    return [1] * len(steps), [1] * len(steps), list(steps)


def test_only_groups_without_a_decomposition_get_their_gold_trajectory() -> None:
    prompts = ["A", "A", "B", "B", "C", "C"]
    rollouts = [encoded(SINGLE), encoded(SINGLE), encoded(SINGLE), encoded(SPLIT)]
    rollouts += [encoded(SINGLE), encoded("<answer> x </answer>")]
    gold = {"A": encoded(SPLIT, "g"), "B": encoded(SPLIT, "g")}
    assert mix_gold(prompts, rollouts, gold) == [False, True, False, False, False, False]
    assert rollouts[1] == gold["A"] and rollouts[3] == encoded(SPLIT)  # B decomposed itself
    assert first_search_decomposed(map(parse_action, ["<answer> y </answer>", SPLIT])) is True
    assert first_search_decomposed(map(parse_action, [SINGLE, SPLIT])) is False
    assert first_search_decomposed([parse_action("<answer> y </answer>")]) is None


class SingleQueryModel(OneReplyChatModel):
    """Searches one query, then answers: never decomposes."""

    def respond(self, messages: list[BaseMessage], stop: Any, **_: Any) -> str:
        done = any(isinstance(m, AIMessage) for m in messages)
        return "<think>t</think>\n<answer> x </answer>" if done else SINGLE


def test_graph_rollout_hands_trl_the_gold_tokens_and_flags_them() -> None:
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    prompt = raw_prompt(question, True, "rules")
    transcript = [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "<think>both</think>\n<search> S ## E </search>"},
        {"role": "user", "content": "\n\n<information>docs</information>\n\n"},
        {"role": "assistant", "content": "<think>same</think>\n<answer> yes </answer>"},
    ]
    rollout = GraphRollout(
        {prompt: question}, TitleSearcher(), raw_prompt="rules", gold={prompt: transcript}
    )
    rollout.policy_model = lambda trainer: SingleQueryModel()  # type: ignore[method-assign]
    out = rollout([prompt] * 3, SimpleNamespace(processing_class=CharTokenizer()))
    assert out["gold"] == [False, False, True]
    ids, mask, steps = completion_tokens(convert_to_messages(transcript), CharTokenizer())
    assert out["completion_ids"][2] == ids and out["env_mask"][2] == mask
    assert out["steps"][2] == steps and out["steps"][0][0] == SINGLE  # the policy's own


def test_logged_rollout_metrics_leave_gold_rows_out() -> None:
    outcome = reward_functions(RewardConfig())[0]
    logged: dict[str, float] = {}
    outcome(
        completions=["", ""],
        steps=[[SPLIT, "<think>t</think><answer> x </answer>"], [SINGLE]],
        answers=[["x"], ["x"]],
        question_class=["parallelizable", "parallelizable"],
        gold=[True, False],
        log_metric=logged.__setitem__,
    )
    assert logged["rollout/gold_mixed"] == 1.0
    assert logged["rollout/decomposition_rate/parallelizable"] == 0.0  # the policy's own row


def test_gold_transcripts_start_with_the_rollout_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_parallel.retrieval import indexes

    data = tmp_path / "hotpotqa_train.jsonl.gz"
    with gzip.open(data, "wt") as f:
        f.write(json.dumps(COMPARISON) + "\n")
    monkeypatch.setattr(indexes, "corpus_index", lambda corpus=None, **kw: TitleSearcher())
    prompt = raw_prompt(COMPARISON["question"], True, "rules")
    options: dict[str, Any] = {"corpus": None, "max_turns": 3, "top_k": 2}
    gold = gold_transcripts(str(data), [COMPARISON["question"]], {prompt}, "rules", **options)
    messages = gold[prompt]
    assert messages[0]["content"] == prompt
    assert "##" in messages[1]["content"] and messages[-1]["content"].count("<answer>") == 1
    with pytest.raises(UserError, match="no gold trajectory"):
        gold_transcripts(str(data), [COMPARISON["question"]], {"other"}, "rules", **options)
    with pytest.raises(UserError, match="rules prompt"):
        gold_transcripts(str(data), [], {prompt}, "few_shot", **options)
