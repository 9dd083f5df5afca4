#!/bin/bash
# The sequential twin of the pairs lever: the shipped sequential adapter, one more epoch on the same trajectory file.
set -e
cd /work/main
O=runs/pairs-sft
echo "start $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/ \+/ /g') commit $(git rev-parse --short HEAD)" > $O/wall-seq.log
S=$(date +%s)
.venv/bin/langgraph-parallel train sft --init smollm2-sequential --policies sequential --data $O/mix/data.jsonl --epochs 1 --learning-rate 2e-4 --save-steps 5 --resume --out $O/train
echo "rc 0 total $(( $(date +%s) - S )) s $(date -u +%FT%TZ)" >> $O/wall-seq.log
