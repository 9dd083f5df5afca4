"""ParallelMuse on the real engine: every branch call is served partly from the prefix cache."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.retrieval import CorpusIndex, MiniLMEmbeddings
from langgraph_parallel.retrieval.corpus import bundled_corpus_path
from tests.fakes import muse_graph

pytestmark = [pytest.mark.integration, pytest.mark.engine]

QUESTION_ID = "5a7d5c175542991319bc93b1"  # Harvey Pekar vs Denise Levertov: who was born earlier?
SLICE_ROWS = 60


@pytest.fixture(scope="module")
def question():
    sample = Path(__file__).resolve().parents[2] / "data" / "hotpotqa_dev_sample300.jsonl.gz"
    return next(q for q in load_questions(sample) if q.id == QUESTION_ID)


@pytest.fixture(scope="module")
def small_index(question, tmp_path_factory):
    """The question's gold paragraphs plus the corpus's first rows, embedded for real."""
    root = tmp_path_factory.mktemp("muse_index")
    with gzip.open(bundled_corpus_path(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    gold = [r for r in rows if r["title"] in question.supporting_titles]
    chosen = gold + [r for r in rows[:SLICE_ROWS] if r not in gold]
    corpus = root / "slice.jsonl.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in chosen)
    return CorpusIndex.build(corpus, MiniLMEmbeddings(), cache_dir=root / "cache")


def test_every_branch_call_reads_the_prefix_cache(chat_model, small_index, question):
    graph = muse_graph(
        chat_model,
        small_index,
        budget=4,
        top_k_steps=1,
        region="all",  # every step has tokens in "all", so the first rollout always forks
        min_branch_step=0,  # ... from any step, its first one included
        max_turns=3,
        max_tokens=48,
        report_max_tokens=32,
        report_style="model",  # report calls on the engine (auto would extract for this model)
    )
    state = graph.invoke({"question": question.question})

    trajectories = state["trajectories"]
    assert len(trajectories) == 4
    branches = [t for t in trajectories if t["parent"] is not None]
    assert len(branches) == 3, [(t["id"], t["stop_reason"]) for t in trajectories]
    for branch in branches:
        parent = next(t for t in trajectories if t["id"] == branch["parent"])
        assert (
            branch["messages"][: branch["messages_prefix_len"]]
            == parent["messages"][: branch["messages_prefix_len"]]
        )
        own = [s for s in branch["steps"] if s["origin"] == branch["id"]]
        assert own, branch["stop_reason"]
        for step in own:
            assert step["usage"]["cached_prompt_tokens"] > 0, (branch["id"], step["usage"])
            assert step["logprobs"] and len(step["logprobs"][0]["top_logprobs"]) >= 16
    counters = state["counters"]
    assert counters["llm_calls"] == sum(t["counters"]["llm_calls"] for t in trajectories)
    assert counters["cached_prompt_tokens"] > 0
    # Identical trajectories share one report call (reports="distinct"); each still has a report.
    reused = counters.get("reports_reused", 0)
    assert counters["report_calls"] + reused == 4 == len(state["reports"])
    assert reused == sum(r["reused_from"] is not None for r in state["reports"])
    assert state["stop_reason"] == "answered" or state["stop_reason"].startswith("no_answer")


def test_rollouts_graph_and_every_join_run_on_the_engine(chat_model, small_index, question):
    """The rollouts-majority baseline end to end, then weighted and the analyst on its output."""
    from langgraph_parallel.metrics import normalize_answer
    from langgraph_parallel.parallel_muse.context import MuseContext
    from langgraph_parallel.parallel_muse.reduce import AggregateNode, vote
    from tests.fakes import rollouts_graph

    settings = {"max_turns": 2, "max_tokens": 48, "report_max_tokens": 32, "temperature": 1.0}
    graph = rollouts_graph(chat_model, small_index, budget=3, **settings)
    state = graph.invoke({"question": question.question})

    trajectories = state["trajectories"]
    assert len(trajectories) == 3 and all(t["parent"] is None for t in trajectories)
    assert len({t["seed"] for t in trajectories}) == 3
    # report_style="auto" on the in-process engine (a raw-prompt model): reports are extracted
    # from the trajectories, with no report call.
    assert "report_calls" not in state["counters"] and len(state["reports"]) == 3
    assert all(r["text"].startswith("## Solution Planning") for r in state["reports"])
    assert all(r["error"] is None for r in state["reports"])
    record = state["aggregation"]
    assert record["join"] == "majority" and record["method"] == "majority"
    answered = [t for t in trajectories if t["answer"]]
    winner, votes = vote(answered, weighted=False)
    assert record["votes"] == votes
    assert state["answer"] == (winner["answer"] if winner else None)

    # weighted: the same vote, each answer weighted by the confidence of its real logprobs.
    if answered:
        _, weights = vote(answered, weighted=True)
        assert all(0.0 < w <= sum(votes.values()) for w in weights.values())
        assert weights != votes, "real logprobs give confidences below 1"

    # select: give the three trajectories distinct answers so the analyst must be asked.
    distinct = [{**t, "answer": f"candidate {k}"} for k, t in enumerate(trajectories, start=1)]
    analyst = AggregateNode(chat_model, MuseContext(join="select", report_max_tokens=16))
    result = analyst(
        {"question": question.question, "trajectories": distinct, "reports": state["reports"]},
        None,
    )
    chosen = result["aggregation"]
    assert chosen["method"] == "analyst", chosen  # the engine's regex makes the choice parse
    assert chosen["fallback"] is None and result["counters"]["aggregate_calls"] == 1
    assert normalize_answer(result["answer"]) in {normalize_answer(t["answer"]) for t in distinct}
    assert result["answer"] == next(t["answer"] for t in distinct if t["id"] == chosen["chosen"])


def test_a_continued_report_is_prefilled_from_the_prefix_cache(chat_model, small_index, question):
    """report_style="continue": the report prompt extends the trajectory's last agent prompt."""
    from tests.fakes import rollouts_graph

    graph = rollouts_graph(
        chat_model,
        small_index,
        budget=2,
        max_turns=2,
        max_tokens=48,
        report_max_tokens=16,
        temperature=1.0,
        reports="all",
        report_style="continue",
    )
    state = graph.invoke({"question": question.question})

    counters = state["counters"]
    assert counters["report_calls"] == 2 and all(r["error"] is None for r in state["reports"])
    # Every report call found its trajectory's last agent prompt in the cache, less at most the
    # last partial block (vLLM caches whole blocks of 32 tokens on this engine).
    last_prompts = [t["steps"][-1]["usage"]["prompt_tokens"] for t in state["trajectories"]]
    assert counters["report_cached_prompt_tokens"] >= sum(last_prompts) - 32 * len(last_prompts)
    uncached = counters["report_prompt_tokens"] - counters["report_cached_prompt_tokens"]
    assert uncached < counters["report_prompt_tokens"] / 2
