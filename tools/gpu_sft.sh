#!/usr/bin/env bash
# The device machine's half of tools/gpu_sft.py (read its docstring first).
#   gpu_sft.sh stage BUNDLE        copy a bundle of wheels/parts/data into the stage folder
#   gpu_sft.sh train [OPTIONS...]  join the parts, install the wheels, run `train sft --data`
#                                  on each staged data-NAME.tar.gz, one policy at a time
#                                  (GPU_SFT_POLICIES, "parallel sequential": every data file's
#                                  parallel adapter first), each adapter under $OUT/NAME/POLICY
#                                  as soon as it is trained and the cards in $OUT/meta.tar
# Paths and interpreter can be moved (tools/gpu_sft.py rehearse does): GPU_SFT_STAGE,
# GPU_SFT_SITE, GPU_SFT_PYTHONPATH (extra import path), PYTHON, GPU_SFT_PIP.
set -euo pipefail
STAGE=${GPU_SFT_STAGE:-/tmp/gpu}
SITE=${GPU_SFT_SITE:-/tmp/site}
PYTHON=${PYTHON:-python3}
PIP=${GPU_SFT_PIP:-$PYTHON -m pip}
action=${1:?stage BUNDLE or train [train sft options]}
shift
if [ "$action" = stage ]; then
  mkdir -p "$STAGE"
  cp -a "${1:?bundle folder}"/. "$STAGE"/
  echo "staged: $(ls "$STAGE" | wc -l) files, $(du -sm "$STAGE" | cut -f1) MB in $STAGE"
  exit 0
fi
[ "$action" = train ] || { echo "unknown action $action" >&2; exit 2; }
: "${OUT:?OUT must name the folder whose files come back}"
for first in "$STAGE"/*.part001; do
  [ -e "$first" ] || continue
  whole=${first%.part001}
  cat "$whole".part[0-9][0-9][0-9] > "$whole.tmp" && rm "$whole".part[0-9][0-9][0-9]
  mv "$whole.tmp" "$whole"
done
compgen -G "$STAGE/data-*.tar.gz" >/dev/null \
  || { echo "no $STAGE/data-*.tar.gz: stage every bundle first" >&2; exit 2; }
$PIP install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$SITE" "$STAGE"/*.whl
export PYTHONPATH="$SITE${GPU_SFT_PYTHONPATH:+:$GPU_SFT_PYTHONPATH}:$PWD"
export LANGGRAPH_PARALLEL_CACHE=${LANGGRAPH_PARALLEL_CACHE:-/tmp/lgp-cache}
export PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1
$PYTHON -c 'import torch, transformers, peft, trl; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__, "peft", peft.__version__, "trl", trl.__version__)' \
  2>&1 | tee "$OUT/train.log"
mkdir -p "$STAGE/data"
for t in "$STAGE"/data-*.tar.gz; do tar -C "$STAGE/data" -xzf "$t"; done
run=$(mktemp -d)
for policy in ${GPU_SFT_POLICIES:-parallel sequential}; do
  for data in "$STAGE"/data/*/data.jsonl; do
    name=$(basename "$(dirname "$data")")
    start=$(date +%s)
    $PYTHON -m langgraph_parallel.apps.cli train sft --data "$data" --policies "$policy" \
      --out "$run/$name" "$@" 2>&1 | tee -a "$OUT/train.log"
    echo "$name $policy wall_s $(( $(date +%s) - start ))" | tee -a "$OUT/train.log"
    # Files come back at most 8 to a call: the weights one by one, every card in one tar.
    mkdir -p "$OUT/$name/$policy"
    cp "$run/$name/$policy/adapter_model.safetensors" "$OUT/$name/$policy/"
    tar -C "$run" -rf "$OUT/meta.tar" "$name/$policy/adapter_config.json" \
      "$name/$policy/langgraph_parallel.json" "$name/$policy/metrics.jsonl"
  done
done
