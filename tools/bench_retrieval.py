"""Gold-page recall and latency of every index kind, on HotpotQA and on a 2Wiki corpus.

    .venv/bin/python tools/bench_retrieval.py --out benchmarks/retrieval

For each corpus and index kind (``dense``, ``bm25``, ``hybrid`` with min-max fusion and title
lookup, the same without title lookup, and with RRF fusion): recall@1/3/10 of the gold
supporting titles with the question itself as the query (mean share of gold titles found, and
the share of questions with all of them found); with the shipped policy's own sub-queries
(``agent_sub_queries``: every sub-query of its committed run on the bundled sample,
``benchmarks/rl/sft_grpo/``), the share whose top 1 / top 3 hold a gold page of their
question; and latency: one query; four sub-queries sent as the fan-out sends them (four
concurrent branches joined by the search node's ``SearchBatcher``); the same four as four
concurrent one-query calls (the fan-out before batching); and four queries in one call.
Latency is measured with gold titles as the queries (entity names, the shape of the agent's own
sub-queries) and again with whole questions (``questions_as_queries``: longer texts, so the
encoder's per-query work shows).

Questions: HotpotQA from the distractor subset in ``../shared/data`` minus the bundled evaluation
sample, shuffled with seed 0; questions ``[0, 400)`` of that order were used to choose the hybrid
fusion and its weights, so the figures reported here come from ``[400, 800)``. 2Wiki: all 500
questions of its sample, over a corpus of their context paragraphs (no tuning on it). The title
lookup has no tuned parameter: its rule (an exact match first, half a bonus up to a
parenthetical) was fixed before it was measured.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from langgraph_parallel.apps.bench_cli import source_commit  # noqa: E402
from langgraph_parallel.paths import repo_data_dir  # noqa: E402
from langgraph_parallel.retrieval import BM25Index, HybridIndex  # noqa: E402
from langgraph_parallel.retrieval.batching import SearchBatcher  # noqa: E402
from langgraph_parallel.retrieval.indexes import corpus_index  # noqa: E402
from langgraph_parallel.train.contexts import context_corpus  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
KS = (1, 3, 10)
AGENT_RUNS = REPO / "benchmarks" / "rl" / "sft_grpo"


def rows(path: Path) -> list[dict[str, Any]]:
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def hotpot_questions(offset: int, limit: int) -> list[dict[str, Any]]:
    held = {r["id"] for r in rows(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")}
    pool = [
        r
        for r in rows(SHARED / "hotpotqa_dev_distractor_subset.jsonl.gz")
        if r["id"] not in held and r["supporting_titles"]
    ]
    random.Random(0).shuffle(pool)
    return pool[offset : offset + limit]


def twowiki() -> tuple[list[dict[str, Any]], Path]:
    questions = [r for r in rows(SHARED / "2wikimultihopqa_dev_sample500.jsonl.gz")]
    contexts = [
        {c["title"]: " ".join(s.strip() for s in c["sentences"]) for c in q["context"]}
        for q in questions
    ]
    return [q for q in questions if q["supporting_titles"]], context_corpus(contexts)


def recall(index: Any, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Recall@k of gold titles, the question as the query (one batched call per 32)."""
    found: dict[int, list[float]] = {k: [] for k in KS}
    complete: dict[int, list[bool]] = {k: [] for k in KS}
    for start in range(0, len(questions), 32):
        chunk = questions[start : start + 32]
        hits = index.batch_search([q["question"] for q in chunk], max(KS))
        for q, passages in zip(chunk, hits, strict=True):
            gold = set(q["supporting_titles"])
            for k in KS:
                got = gold & {p.title for p in passages[:k]}
                found[k].append(len(got) / len(gold))
                complete[k].append(got == gold)
    out = {f"recall@{k}": round(statistics.mean(found[k]), 4) for k in KS}
    out |= {f"all@{k}": round(statistics.mean(complete[k]), 4) for k in KS}
    return out


def sub_query_hits(index: Any, results: Path) -> dict[str, float]:
    """Share of a benchmark run's sub-queries with a gold page of their question in the top 1/3."""
    pairs = [
        (hit["query"], set(row["gold_found"]))
        for row in rows(results)
        for hit in row["sub_query_gold"]
    ]
    found = index.batch_search([query for query, _ in pairs], 3)
    return {
        "sub_queries": len(pairs),
        **{
            f"hit@{k}": round(
                statistics.mean(
                    bool(gold & {p.title for p in passages[:k]})
                    for (_, gold), passages in zip(pairs, found, strict=True)
                ),
                4,
            )
            for k in (1, 3)
        },
    }


def latency(index: Any, texts: Sequence[str], n: int) -> dict[str, float]:
    """Median seconds: one query; a fan-out of four; four unbatched calls; one four-query call.

    The fan-out is measured as the search node runs it: four threads (the ``Send`` branches)
    each submit one sub-query to a :class:`SearchBatcher` under one group key. ``texts`` needs
    ``4 * n`` queries: round ``i`` uses ``texts[4i:4i+4]`` and its first one alone.
    """
    texts = list(texts[: 4 * n])
    if len(texts) < 4 * n:
        raise SystemExit(f"latency needs {4 * n} queries, got {len(texts)}")
    one, fan, unbatched, batch = [], [], [], []
    with ThreadPoolExecutor(4) as branches, ThreadPoolExecutor(16) as pool:
        batcher = SearchBatcher(index, pool)
        for i in range(n):
            four = texts[4 * i : 4 * i + 4]
            start = time.perf_counter()
            index.batch_search([four[0]], 3)
            one.append(time.perf_counter() - start)
            start = time.perf_counter()
            branch = functools.partial(batcher.submit, k=3, group=f"fan-out-{i}", size=4)
            [future.result() for future in list(branches.map(branch, four))]
            fan.append(time.perf_counter() - start)
            start = time.perf_counter()
            list(branches.map(lambda q: index.batch_search([q], 3), four))
            unbatched.append(time.perf_counter() - start)
            start = time.perf_counter()
            index.batch_search(four, 3)
            batch.append(time.perf_counter() - start)
    one_s, fan_s = statistics.median(one), statistics.median(fan)
    return {
        "one_query_s": round(one_s, 4),
        "fan_out_4_s": round(fan_s, 4),
        "unbatched_4_s": round(statistics.median(unbatched), 4),
        "one_call_4_s": round(statistics.median(batch), 4),
        "fan_out_4_over_one": round(fan_s / one_s, 2),
    }


def indexes(corpus: str | None) -> dict[str, Any]:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="benchmarks/retrieval")
    parser.add_argument("--offset", type=int, default=400, help="first HotpotQA question used")
    parser.add_argument("--limit", type=int, default=400, help="HotpotQA questions")
    parser.add_argument("--latency-samples", type=int, default=30)
    args = parser.parse_args()
    results: dict[str, Any] = {"commit": source_commit(), "command": " ".join(sys.argv)}
    wiki_questions, wiki_corpus = twowiki()
    sets = {
        "hotpotqa": (hotpot_questions(args.offset, args.limit), None),
        "2wiki": (wiki_questions, str(wiki_corpus)),
    }
    for name, (questions, corpus) in sets.items():
        agent_run = AGENT_RUNS / name / "sft" / "results.jsonl"
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
                "agent_sub_queries": sub_query_hits(index, agent_run),
                **latency(index, titles, args.latency_samples),
                "questions_as_queries": latency(
                    index, [q["question"] for q in questions], args.latency_samples
                ),
            }
            print(name, kind, block[kind], flush=True)
        results[name] = block
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "retrieval.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out / 'retrieval.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
