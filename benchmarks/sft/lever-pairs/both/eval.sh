#!/bin/bash
# Candidate 2 (three pair kinds): parallel-search on the sft experiment's two samples, as lever-pairs ran them.
set -e
cd /work/main
LP=.venv/bin/langgraph-parallel
B=benchmarks/sft/lever-pairs/both
M=runs/pairs-sft2/train/parallel
echo "start $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)" > runs/pairs-sft2/eval.log
S=$(date +%s)
$LP bench --dataset data/hotpotqa_dev_sample300.jsonl.gz --seed 0 --limit 300 --graphs parallel-search --model $M --concurrency 6 --out $B/hotpotqa/parallel-search
$LP bench --dataset ../shared/data/2wikimultihopqa_dev_sample500.jsonl.gz --seed 0 --limit 100 --graphs parallel-search --model $M --concurrency 6 --corpus benchmarks/sft/lever-pairs/2wiki/contexts-f071f5aadcc7.jsonl.gz --out $B/2wiki/parallel-search
echo "rc 0 total $(( $(date +%s) - S )) s $(date -u +%FT%TZ)" >> runs/pairs-sft2/eval.log
