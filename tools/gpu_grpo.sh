#!/usr/bin/env bash
# The device machine's half of tools/gpu_grpo.py (read its docstring first).
#   gpu_grpo.sh stage BUNDLE          copy a bundle into the stage folder (as gpu_sft.sh does)
#   gpu_grpo.sh train [OPTIONS...]    join the parts, install the wheels, restore data/ and the
#                                     adapter, resume the staged checkpoint if any, run one
#                                     `train grpo` piece, and put its checkpoint, best adapter
#                                     and logs under $OUT (at most 8 files of 16 MiB)
#   gpu_grpo.sh bench [OPTIONS...]    the same set-up, then lab/rollout_speed.py (a rollout's
#                                     decoding per generation mode, and retrieval) into $OUT
# Paths and interpreter can be moved (gpu_grpo.py rehearse does): GPU_SFT_STAGE, GPU_SFT_SITE,
# GPU_SFT_PYTHONPATH, PYTHON, GPU_SFT_PIP, GPU_GRPO_RUN (the run's folder), GPU_GRPO_NO_TREE.
set -euo pipefail
STAGE=${GPU_SFT_STAGE:-/tmp/gpu}
SITE=${GPU_SFT_SITE:-/tmp/site}
RUN=${GPU_GRPO_RUN:-/tmp/grpo-run}
PYTHON=${PYTHON:-python3}
PIP=${GPU_SFT_PIP:-$PYTHON -m pip}
action=${1:?stage BUNDLE or train [train grpo options]}
shift
if [ "$action" = stage ]; then
  exec bash "$(dirname "$0")/gpu_sft.sh" stage "$@"
fi
[ "$action" = train ] || [ "$action" = bench ] || { echo "unknown action $action" >&2; exit 2; }
: "${OUT:?OUT must name the folder whose files come back}"
began=$(date +%s)
for first in "$STAGE"/*.part001; do
  [ -e "$first" ] || continue
  whole=${first%.part001}
  cat "$whole".part[0-9][0-9][0-9] > "$whole.tmp" && rm "$whole".part[0-9][0-9][0-9]
  mv "$whole.tmp" "$whole"
done
[ -f "$STAGE/tree.tar.gz" ] || { echo "no $STAGE/tree.tar.gz: stage every bundle first" >&2; exit 2; }
# Once a machine: a second call on the still-warm machine finds the wheels installed.
if [ ! -f "$SITE/.installed" ]; then
  $PIP install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$STAGE"/*.whl
  touch "$SITE/.installed"
fi
if [ -z "${GPU_GRPO_NO_TREE:-}" ]; then
  tar -xzf "$STAGE/tree.tar.gz"   # data/ and the shipped parallel adapter, untracked for the calls
  mkdir -p ../shared/data && cp "$STAGE"/hotpotqa_dev_distractor_subset.jsonl.gz ../shared/data/
fi
mkdir -p "$RUN/trainer"
if [ -f "$STAGE/ckpt.tar" ]; then   # the previous piece's checkpoint: this piece resumes it
  tar -C "$RUN/trainer" -xf "$STAGE/ckpt.tar"
fi
if [ -f "$STAGE/logs.tar" ]; then   # its metrics and dev logs, which a resumed piece extends
  tar -C "$RUN" -xf "$STAGE/logs.tar"
fi
export PYTHONPATH="$SITE${GPU_SFT_PYTHONPATH:+:$GPU_SFT_PYTHONPATH}:$PWD"
export LANGGRAPH_PARALLEL_CACHE=${LANGGRAPH_PARALLEL_CACHE:-/tmp/lgp-cache}
export PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1 TOKENIZERS_PARALLELISM=false
$PYTHON -c 'import torch, transformers, peft, trl; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "", "transformers", transformers.__version__, "peft", peft.__version__, "trl", trl.__version__)' \
  2>&1 | tee "$OUT/train.log"
echo "setup_s $(( $(date +%s) - began ))" | tee -a "$OUT/train.log"
if [ "$action" = bench ]; then
  PYTHONWARNINGS=ignore $PYTHON -m lab.rollout_speed --out "$OUT/rollout_speed.jsonl" "$@" \
    2>> "$OUT/train.log"
  exit
fi
start=$(date +%s)
status=0
PYTHONWARNINGS=ignore $PYTHON -m langgraph_parallel.apps.cli train grpo --out "$RUN" "$@" \
  >> "$OUT/train.log" 2>&1 &
trainer=$!
# GPU_GRPO_PROFILE_S=S[:DELAY]: sample every thread of the piece for S seconds after DELAY
# seconds (default 120: past the model's conversion and the first dev evaluation) into
# profile.txt, one collapsed stack per line with its sample count (py-spy's raw format).
if [ -n "${GPU_GRPO_PROFILE_S:-}" ] && [ -x "$SITE/bin/py-spy" ]; then
  spec=$GPU_GRPO_PROFILE_S
  delay=120
  if [[ $spec == *:* ]]; then delay=${spec#*:}; fi
  (sleep "$delay"
   "$SITE/bin/py-spy" record --pid "$trainer" --threads --idle --rate 20 --nonblocking \
     --duration "${spec%%:*}" --format raw --output "$OUT/profile.txt" > /dev/null 2>&1 \
     || echo "py-spy failed" >> "$OUT/train.log") &
  profiler=$!
fi
wait "$trainer" || status=$?
if [ -n "${profiler:-}" ]; then   # a piece shorter than the delay: stop waiting to profile it
  pkill -P "$profiler" 2>/dev/null || true
  wait "$profiler" 2>/dev/null || true
fi
tail -n 25 "$OUT/train.log"   # the trainer wrote only to the log: its end to the caller too
echo "piece wall_s $(( $(date +%s) - start )) exit $status" | tee -a "$OUT/train.log"
# The newest checkpoint, Adam's moments in bfloat16 (torch.optim casts them back on load).
last=$(ls -d "$RUN"/trainer/checkpoint-* 2>/dev/null | sort -t- -k2 -n | tail -1 || true)
if [ -n "$last" ]; then
  $PYTHON - "$last" <<'EOF'
import sys, torch
path = sys.argv[1] + "/optimizer.pt"
state = torch.load(path, map_location="cpu", weights_only=False)
for per_param in state["state"].values():
    for key in ("exp_avg", "exp_avg_sq"):
        if key in per_param:
            per_param[key] = per_param[key].to(torch.bfloat16)
torch.save(state, path)
EOF
  rm -f "$last"/tokenizer.json "$last"/README.md
  tar -C "$RUN/trainer" -cf "$RUN/ckpt.tar" "$(basename "$last")"
  split -b 15M -d -a 3 "$RUN/ckpt.tar" "$OUT/ckpt.tar.part"
  echo "checkpoint $(basename "$last"): $(du -m "$RUN/ckpt.tar" | cut -f1) MB" | tee -a "$OUT/train.log"
fi
steps=$(ls -d "$RUN"/trainer/checkpoint-* 2>/dev/null | sed 's/.*-//' | sort -n | tail -1 || true)
echo "gpu_piece_s $(( $(date +%s) - began )) last_step ${steps:-none}" | tee -a "$OUT/train.log"
# Files come back at most 16 MiB each: the best adapter with the logs, the last one apart.
members=""
for f in best metrics.jsonl dev.jsonl run.json; do
  if [ -e "$RUN/$f" ]; then members="$members $f"; fi
done
if [ -n "$members" ]; then tar -C "$RUN" -cf "$OUT/best.tar" $members; fi
if [ -d "$RUN/adapter" ]; then tar -C "$RUN" -cf "$OUT/last.tar" adapter; fi
exit $status
