#!/usr/bin/env bash
# ParallelMuse under its shipped defaults vs 8 independent rollouts (majority), the cache warm as a
# user's is: the first 25 HotpotQA bridge questions of the parallel-muse experiment's held-out
# sample (seed 0), BM25, max_turns 6, concurrency 4, KV cache 8 GiB. Resumes the folder's rows.
# Then analyse.py writes joins.md/joins.json. Run from the repository root.
# LIMIT=150 ROWS=hotpotqa150: the 150 questions, into a folder of their own (tables in it).
# GRAPHS=parallel-muse MUSE="--branch-temperature 1.0" BASE=hotpotqa150-pairs: a ParallelMuse
# setting tried alone; analyse.py takes the independent rollouts from BASE's rows (same questions).
# FRESH=1 empties the prefix cache before each question (--fresh-cache, the paper's comparison).
# The dtype is pinned to float32: a run resumed in pieces on CPUs with and without native bfloat16
# would otherwise mix two dtypes' trajectories in one table (each piece's CPU is named in the README).
set -eu
export LANGGRAPH_PARALLEL_ENGINE='{"kv_cache_memory_bytes": 8589934592, "dtype": "float32"}'
O=benchmarks/parallel_muse/defaults
LIMIT=${LIMIT:-25}
ROWS=$O/${ROWS:-hotpotqa}
.venv/bin/langgraph-parallel bench --dataset data/hotpotqa_dev_sample300.jsonl.gz --types bridge \
  --limit $LIMIT --index bm25 --max-turns 6 --seed 0 --model auto \
  --graphs ${GRAPHS:-parallel-muse,rollouts-majority} --concurrency 4 ${FRESH:+--fresh-cache} \
  ${MUSE:-} --out $ROWS
.venv/bin/python $O/analyse.py $ROWS ${BASE:+$O/$BASE}
