"""Gold-page recall and latency of every index kind, on HotpotQA and on a 2Wiki corpus.

``langgraph-parallel bench run retrieval`` writes ``OUT/retrieval.json``. For each corpus and
index kind (``dense``, ``bm25``, ``hybrid`` with min-max fusion and title lookup, the same
without title lookup, and with RRF fusion): recall@1/3/10 of the gold supporting titles with the
question itself as the query (mean share of gold titles found, and the share of questions with
all of them found); with the shipped policy's own sub-queries (``agent_sub_queries``: every
sub-query of its committed run on the bundled sample, ``benchmarks/rl/sft_grpo/``), the share
whose top 1 / top 3 hold a gold page of their question; and latency: one query; four sub-queries
sent as the fan-out sends them (four concurrent branches joined by the search node's
``SearchBatcher``); the same four as four concurrent one-query calls (the fan-out before
batching); and four queries in one call. Latency is measured with gold titles as the queries
(entity names, the shape of the agent's own sub-queries) and again with whole questions
(``questions_as_queries``: longer texts, so the encoder's per-query work shows); setting
``latency_samples`` rounds each (:mod:`.retrieval_measures`).

Questions: HotpotQA from the distractor subset in ``../shared/data`` minus the bundled evaluation
sample, shuffled with seed 0; questions ``[0, 400)`` of that order were used to choose the hybrid
fusion and its weights, so the figures reported here come from ``[400, 800)`` (setting
``offset``, ``--limit`` questions). 2Wiki: all 500 questions of its sample, over a corpus of
their context paragraphs (no tuning on it), read by the one rule of every 2Wiki corpus
(:func:`~langgraph_parallel.eval.contexts.row_paragraphs`; the committed figures were measured
with the sentences joined by a space instead). The title lookup has no tuned parameter: its rule
(an exact match first, half a bonus up to a parenthetical) was fixed before it was measured.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.experiments.retrieval.retrieval_measures import latency, recall, sub_query_hits
from lab.paths import checkout_dir
from lab.provenance import at_commit, shown_command
from langgraph_parallel.eval.contexts import context_corpus, row_paragraphs
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import repo_data_dir, shared_data_dir, source_commit

__all__ = ["EXPERIMENT", "hotpot_questions", "indexes", "render_retrieval", "twowiki"]


def hotpot_questions(offset: int, limit: int | None) -> list[dict[str, Any]]:
    """Return HotpotQA distractor questions outside the bundled sample, seeded order, a window."""
    held = {r["id"] for r in read_rows(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")}
    pool = [
        r
        for r in read_rows(shared_data_dir() / "hotpotqa_dev_distractor_subset.jsonl.gz")
        if r["id"] not in held and r["supporting_titles"]
    ]
    random.Random(0).shuffle(pool)
    return pool[offset : None if limit is None else offset + limit]


def twowiki() -> tuple[list[dict[str, Any]], Path]:
    """Return the 2Wiki sample's questions with gold titles, and the corpus of its paragraphs."""
    questions = read_rows(shared_data_dir() / "2wikimultihopqa_dev_sample500.jsonl.gz")
    corpus = context_corpus(row_paragraphs(q) for q in questions)
    return [q for q in questions if q["supporting_titles"]], corpus


def indexes(corpus: str | None) -> dict[str, Any]:
    """Return every index kind the table compares, over ``corpus`` (``None``: the bundled one)."""
    from langgraph_parallel.retrieval import BM25Index, HybridIndex
    from langgraph_parallel.retrieval.indexes import corpus_index

    dense = corpus_index(corpus, kind="dense")
    lexical = corpus_index(corpus, kind="bm25")
    assert isinstance(lexical, BM25Index)
    return {
        "dense": dense,
        "bm25": lexical,
        "hybrid": corpus_index(corpus, kind="hybrid"),
        "hybrid-no-titles": HybridIndex(lexical, dense, title_weight=0.0),
        "hybrid-rrf": HybridIndex(lexical, dense, method="rrf"),
    }


def _run(run: Run) -> None:
    samples = run.settings["latency_samples"]
    results: dict[str, Any] = {"commit": source_commit(), "command": run.command}
    wiki_questions, wiki_corpus = twowiki()
    sets = {
        "hotpotqa": (hotpot_questions(run.settings["offset"], run.limit), None),
        "2wiki": (wiki_questions, str(wiki_corpus)),
    }
    agent_runs = checkout_dir() / "benchmarks" / "rl" / "sft_grpo"
    for name, (questions, corpus) in sets.items():
        block: dict[str, Any] = {"questions": len(questions)}
        for kind, index in indexes(corpus).items():
            index.batch_search(["warm up"], 3)
            # The agent's sub-queries are short entity names (3.0 words on average in the
            # end-to-end run, e2e/), so gold titles stand in for them; whole questions are
            # the long case.
            titles = [t for q in questions for t in q["supporting_titles"]]
            block[kind] = {
                "passages": len(index.passages),
                **recall(index, questions),
                "agent_sub_queries": sub_query_hits(index, agent_runs / name / "sft"),
                **latency(index, titles, samples),
                "questions_as_queries": latency(index, [q["question"] for q in questions], samples),
            }
            print(name, kind, block[kind], flush=True)
        results[name] = block
    Experiment.write_tables(run.out, "retrieval", results)


EXPERIMENT = Experiment(
    name="retrieval",
    about="gold-page recall and latency of every index kind, HotpotQA and a 2Wiki corpus",
    out="benchmarks/retrieval",
    run=_run,
    limit=400,
    limit_means="HotpotQA questions from setting offset",
    settings={"offset": 400, "latency_samples": 100},
)


def render_retrieval(path: Path | None = None) -> str:
    """Render gold-title recall and latency per index kind (block ``retrieval-results``)."""
    path = path or checkout_dir() / "benchmarks" / "retrieval" / "retrieval.json"
    result: dict[str, Any] = json.loads(path.read_text())
    at = at_commit(result)
    lines = [
        f"Made by {shown_command(result['command'])}"
        f"{at}. Recall: the question itself is the query; "
        "recall@k is the share of gold supporting titles in the top k (all@3: questions with "
        "every gold title in the top 3). Agent sub-queries: every sub-query the shipped policy "
        "wrote in its committed run on the bundled sample (`benchmarks/rl/sft_grpo/`), the share "
        "with a gold page of its question at rank 1 / in the top 3. `hybrid` (the default) and "
        "`hybrid-rrf` look up titles (a query naming a page finds it first); `hybrid-no-titles` "
        "is the default fusion without the lookup. Latency (median seconds): one sub-query, and "
        "four sent as the fan-out sends them (four branches joined into one call by the search "
        "node's `SearchBatcher`), with entity names as sub-queries (gold titles: the agent's own "
        "sub-queries average 3 words); the last column is the same ratio with whole questions "
        "as the four queries.",
        "",
        "| corpus | index | recall@1 | recall@3 | all@3 | recall@10 | agent sub-queries hit@1 "
        "| hit@3 | 1 sub-query s | fan-out of 4 s | 4 / 1 | 4 / 1, questions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus in ("hotpotqa", "2wiki"):
        block = result[corpus]
        for kind in ("dense", "bm25", "hybrid", "hybrid-no-titles", "hybrid-rrf"):
            r = block[kind]
            agent = r["agent_sub_queries"]
            lines.append(
                f"| {corpus} ({block['questions']} q, {r['passages']:,} passages) | {kind} | "
                f"{r['recall@1']:.3f} | {r['recall@3']:.3f} | {r['all@3']:.3f} | "
                f"{r['recall@10']:.3f} | {agent['hit@1']:.3f} | {agent['hit@3']:.3f} | "
                f"{r['one_query_s']:.4f} | {r['fan_out_4_s']:.4f} | "
                f"{r['fan_out_4_over_one']:.2f} | "
                f"{r['questions_as_queries']['fan_out_4_over_one']:.2f} |"
            )
    return "\n".join(lines)
