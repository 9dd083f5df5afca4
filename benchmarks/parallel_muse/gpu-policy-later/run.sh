#!/usr/bin/env bash
# Partial rollouts with min_branch_step=1 (the sweep's `ppl-top1-later`) on ../gpu-policy's 150
# questions, with that run's settings (bench run parallel-muse: COMMON, --join select, KV cache
# 8 GiB); its independent rollouts are the baseline (analyse.py). Run from the repository root.
set -eu
export LANGGRAPH_PARALLEL_ENGINE='{"kv_cache_memory_bytes": 8589934592}'
C="--index bm25 --max-turns 6 --budget 8 --report-style extract --fresh-cache --seed 0 --model auto
   --graphs parallel-muse --join select --mode ppl --top-k-steps 1 --samples-per-step 7
   --min-branch-step 1 --concurrency 4"
O=benchmarks/parallel_muse/gpu-policy-later
B=".venv/bin/langgraph-parallel bench"
$B --dataset ../shared/data/musique_dev_with_paragraphs200.jsonl.gz --corpus contexts --limit 40 $C --out $O/musique
$B --dataset ../shared/data/2wikimultihopqa_dev_sample500.jsonl.gz --types compositional,inference \
   --corpus contexts --limit 40 $C --out $O/2wiki
$B --dataset data/hotpotqa_dev_sample300.jsonl.gz --types bridge --limit 70 $C --out $O/hotpotqa
.venv/bin/python $O/analyse.py
