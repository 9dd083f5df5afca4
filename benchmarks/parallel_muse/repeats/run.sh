#!/usr/bin/env bash
# ParallelMuse under its defaults and 8 independent rollouts (majority), both with the repeat rule
# (a sub-query already searched in the trajectory is not searched again), on the questions and
# settings of ../defaults/run.sh: the first 25 HotpotQA bridge questions of the held-out sample
# (seed 0), BM25, max_turns 6, concurrency 4, KV cache 8 GiB. Resumes the folder's rows; then
# compare.py pairs them with ../defaults' rows (the same seeds, before the rule). Run from the
# repository root.
set -eu
export LANGGRAPH_PARALLEL_ENGINE='{"kv_cache_memory_bytes": 8589934592}'
O=benchmarks/parallel_muse/repeats
for graph in parallel-muse rollouts-majority; do  # a folder a graph: rows of one model setting
  .venv/bin/langgraph-parallel bench --dataset data/hotpotqa_dev_sample300.jsonl.gz \
    --types bridge --limit 25 --index bm25 --max-turns 6 --seed 0 --model auto \
    --graphs $graph --concurrency 4 --out $O/$graph
done
.venv/bin/python $O/compare.py
