#!/usr/bin/env bash
# Train both embedded policies (parallel, sequential) from the base model on a CPU, in one sitting.
#
#   bash tools/train_policies.sh OUT [train sft flags...]
#
# 1. synthesise HotpotQA trajectories (comparisons as `##` turns, bridge chains one query a turn)
#    and 2Wiki chains, every passage shown as its title and first two sentences
#    (--passage-sentences 2, recorded in the cards: the graphs show the trained policy the same);
# 2. pick the first stage's questions, the same for both policies (`train chains first`);
# 3. train one LoRA adapter per policy (2 epochs, every layer), checkpointing as it goes.
#    Stopped, the same command continues where it was (each step is skipped when its output is
#    there; training resumes from its last checkpoint).
# The benchmarks' questions are held out by id (data/hotpotqa_dev_sample300.jsonl.gz,
# data/bench_heldout_chains.jsonl.gz) and no question names the README question's people.
# OUT/wall.log gets the wall time of every step and of the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: bash tools/train_policies.sh OUT [train sft flags]}
shift
mkdir -p "$OUT"
LGP=.venv/bin/langgraph-parallel
HELD=(--exclude data/hotpotqa_dev_sample300.jsonl.gz --exclude data/bench_heldout_chains.jsonl.gz)
SHARED=../shared/data
log() { echo "$(date -u +%FT%TZ) $*" | tee -a "$OUT/wall.log"; }
step() {  # step NAME DONE_FILE COMMAND...: run COMMAND unless DONE_FILE exists, timing it
  local name=$1 done=$2 t0
  shift 2
  if [ -e "$done" ]; then log "$name: done before"; return; fi
  t0=$(date +%s)
  "$@"
  log "$name: $(($(date +%s) - t0)) s"
}
START=$(date +%s)
log "start: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, commit $(git rev-parse --short HEAD)"
step "synthesis hotpotqa" "$OUT/hotpot/data.jsonl" \
  $LGP train sft --synthesize-only --per-class 0 --passage-sentences 2 "${HELD[@]}" \
  --out "$OUT/hotpot"
step "synthesis chains" "$OUT/chains/data.jsonl" \
  $LGP train sft --synthesize-only --per-class 0 --max-turns 6 --passage-sentences 2 "${HELD[@]}" \
  --dataset "$SHARED/2wikimultihopqa_dev_sample500.jsonl.gz" --out "$OUT/chains"
step "selection" "$OUT/first/data.jsonl" \
  $LGP train chains first --data "$OUT/hotpot/data.jsonl" \
  --data "$OUT/chains/data.jsonl" --out "$OUT/first"
step "training" "$OUT/sft/sequential/langgraph_parallel.json" \
  $LGP train sft --data "$OUT/first/data.jsonl" "${HELD[@]}" --resume --out "$OUT/sft" \
  --epochs 2 --learning-rate 5e-4 --micro-batch 1 "$@"
log "total: $(($(date +%s) - START)) s (this invocation)"
