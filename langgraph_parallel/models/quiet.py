"""Quiet by default: the engine's libraries log only errors unless asked for more.

vLLM (INFO), transformers, torch's Python loggers ("Triton not available"), torch's C++
warnings (vLLM's NUMA binding notice), a deprecation warning vLLM triggers at every engine start
and vLLM's checkpoint progress bar all write to stderr, in this process and in the engine core
process vLLM spawns. The spawned process reads its settings from the environment, so this sets
environment defaults (never overriding a value the user set) before vLLM is imported or an
engine starts. ``LANGGRAPH_PARALLEL_LOG=info`` (or ``langgraph-parallel --verbose``) keeps every
library's own defaults.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LOG_ENV", "QUIET_ENV", "quiet_environment", "quiet_preparation", "verbose"]

LOG_ENV = "LANGGRAPH_PARALLEL_LOG"
"""``info`` or ``debug``: leave the libraries' logs and warnings on."""

# The one warning vLLM's CPU engine core prints at every start (its kernel scan touches
# torch.distributed.reduce_op); matched by exact module, so no user warning is hidden.
_START_WARNING_MODULE = "vllm.triton_utils.dispatcher"

QUIET_ENV = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    # torch's Python loggers at ERROR: "-torch" is TORCH_LOGS' syntax for that (an empty value
    # would break torch's log setup, so the variable is only ever set to this).
    "TORCH_LOGS": "-torch",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "PYTHONWARNINGS": f"ignore::FutureWarning:{_START_WARNING_MODULE}",
    "HF_HUB_OFFLINE": "1",
    # huggingface_hub's and transformers' bars (loading and writing a model folder on first
    # use): ``build_model_dir`` says in one line what it prepares and when it is done.
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}
"""Environment defaults of a quiet run (a value already set wins)."""


def verbose() -> bool:
    """Whether the user asked for the libraries' own logs (:data:`LOG_ENV`)."""
    return os.environ.get(LOG_ENV, "").strip().lower() in ("info", "debug", "verbose", "1")


def quiet_environment() -> None:
    """Set :data:`QUIET_ENV`'s defaults unless :func:`verbose`; ``HF_HUB_OFFLINE`` always.

    Unless the user set ``PYTHONWARNINGS``, vLLM's start warning is also ignored in this process.

    Call before vLLM is imported: it reads its log level once, at import. The offline setting
    holds either way: the embedded models come from a wheel and nothing reaches a model hub.
    """
    if verbose():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if os.environ["PYTHONWARNINGS"] == QUIET_ENV["PYTHONWARNINGS"]:
        # The engine core is forked (models/engine.py), and a forked process reads no
        # environment: it inherits this process's filters, so the same filter goes here too.
        exact = re.escape(_START_WARNING_MODULE) + r"\Z"
        warnings.filterwarnings("ignore", category=FutureWarning, module=exact)


@contextmanager
def quiet_preparation() -> Iterator[None]:
    """Hold back the libraries' output while a model folder is prepared, unless :func:`verbose`.

    transformers' GGUF conversion and model loading print progress bars of their own (the
    conversion's ignores every setting), several per preparation; ``build_model_dir`` says in
    one line what it prepares and when it is done instead. Errors still raise.
    """
    if verbose():
        yield
        return
    with contextlib.redirect_stderr(io.StringIO()):
        yield
