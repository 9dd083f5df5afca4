#!/bin/bash
# Pairs SFT lever 2: the shipped parallel adapter, one more epoch on the three pair kinds (nationality, born first, both KIND) + HotpotQA replay.
set -e
cd /work/main
LP=.venv/bin/langgraph-parallel
O=runs/pairs-sft2
mkdir -p $O
echo "start $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/ \+/ /g') commit $(git rev-parse --short HEAD)" > $O/wall.log
S=$(date +%s)
[ -f $O/p240/data.jsonl ] || $LP train sft --dataset data/hotpotqa_corpus_pairs.jsonl.gz --per-class 240 --synthesize-only --out $O/p240 --policies parallel
[ -f $O/h60/data.jsonl ] || $LP train sft --dataset ../shared/data/hotpotqa_dev_distractor_subset.jsonl.gz --per-class 60 --synthesize-only --out $O/h60 --policies parallel
[ -f $O/mix/data.jsonl ] || $LP train chains combine --data $O/p240/data.jsonl --data $O/h60/data.jsonl --out $O/mix
$LP train sft --init smollm2-parallel --policies parallel --data $O/mix/data.jsonl --epochs 1 --learning-rate 2e-4 --save-steps 5 --resume --out $O/train
echo "rc 0 total $(( $(date +%s) - S )) s $(date -u +%FT%TZ)" >> $O/wall.log
