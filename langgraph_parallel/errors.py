"""Errors: what the user must fix, and how nodes survive everything else.

A :class:`UserError` is a problem the user can fix (bad input, a missing file or package). The CLI
prints its message on one line, without a traceback, and exits with status 2; nodes re-raise it.

Every other failure is reported instead of raised (a failing tool becomes an observation, a
failing model call a ``stop_reason``), so one bad question never ends a batch:
:func:`reported_error` is the one rule nodes apply in their ``except`` clause. Transient errors
(dropped connections, timeouts, HTTP 429 and 5xx; :func:`is_transient` is the one list) get a
few more attempts first, through LangGraph's own :class:`~langgraph.types.RetryPolicy` on the
node: the node re-raises such an error while attempts remain (:func:`retry_now`) and reports it on
the last one. Errors that retrying cannot fix (a prompt longer than the context, a bad request)
are reported at once.

Error text that reaches state, observations, logs or results files goes through
:func:`describe_error`, which removes the values of known secret environment variables, and
model and tool text goes through :func:`clean_text`, so a stray lone surrogate cannot break a
checkpointer or a UTF-8 results file later.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from langgraph.types import RetryPolicy

    DEFAULT_RETRY_POLICY: RetryPolicy

__all__ = [
    "DEFAULT_RETRY_POLICY",
    "UserError",
    "SECRET_ENV_VARS",
    "call_with_retry",
    "clean_text",
    "default_retry_policy",
    "describe_error",
    "install_hint",
    "is_transient",
    "redact",
    "reported_error",
    "retry_now",
    "storable",
]

_T = TypeVar("_T")


class UserError(Exception):
    """An error caused by input or set-up that the user can fix; the message says how."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def install_hint(extra: str) -> str:
    """Return the command that installs langgraph-parallel's ``extra``, for an error message.

    No release is on PyPI yet, so the command installs from a checkout: the one this package is
    running from when it runs from one (an editable install), else ``.`` in a clone. The name
    ``langgraph-parallel`` alone would fetch whatever anyone registers under it.

    Args:
        extra: A name in ``[project.optional-dependencies]`` of ``pyproject.toml``.

    Returns:
        E.g. ``"`pip install -e '/home/me/langgraph-parallel[train]'` (from the checkout: ..."``.
    """
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file():
        command, where = f"pip install -e {shlex.quote(f'{root}[{extra}]')}", "the checkout"
    else:
        command, where = f"pip install -e '.[{extra}]'", "a clone of langgraph-parallel"
    return f"`{command}` (from {where}: langgraph-parallel has no release on PyPI yet)"


# Transport failures named by class, so the clients (httpx, openai, requests) stay optional
# imports. JSONDecodeError is what a client raises when a gateway answers with an HTML error page.
_TRANSIENT_NAMES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "TransportError",
        "ConnectionError",
        "Timeout",
        "JSONDecodeError",
    }
)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")

SECRET_ENV_VARS: tuple[str, ...] = (
    "TAVILY_API_KEY",
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)
"""Environment variables whose values :func:`redact` removes from error text."""


def is_transient(exc: BaseException) -> bool:
    """Return whether another attempt may succeed where ``exc`` failed.

    True for connection errors and timeouts (builtin, httpx, openai, requests, or LangChain's
    ``ModelError`` classes marked ``is_retryable``, e.g. ``ModelConnectionError``), gateway error
    pages, and HTTP 429 and 5xx answers (``status_code`` on the error or its ``response``); false
    for everything else, e.g. ``ValueError`` for a prompt over the context length or a 400/401
    answer, which fail the same way every time. An error without a status is judged by its
    ``__cause__`` when it has one (a client's wrapper around a dropped connection).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:  # a cause chain may loop
        seen.add(id(current))
        retryable = getattr(type(current), "is_retryable", None) is True  # LangChain says so
        if retryable or isinstance(current, (ConnectionError, TimeoutError)):
            return True
        status = getattr(current, "status_code", None)
        if status is None:
            status = getattr(getattr(current, "response", None), "status_code", None)
        if isinstance(status, int):
            return status == 429 or status >= 500
        if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(current).__mro__):
            return True
        current = current.__cause__
    return False


def __getattr__(name: str) -> Any:
    # LangGraph is imported on first use of the policy, not with this module: importing it
    # takes about a second on a 2-core CPU, and the command line and every UserError import
    # this module.
    if name == "DEFAULT_RETRY_POLICY":
        return default_retry_policy()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def default_retry_policy() -> RetryPolicy:
    """Return ``DEFAULT_RETRY_POLICY``: retries of the model and search nodes.

    3 attempts, 0.5 s then 1 s apart (+ up to 1 s jitter). Short on purpose: the searcher may
    retry on its own (``TavilySearcher`` does), and a question waiting longer than a few seconds
    for a flaky service is better reported and moved past. To ride out a model server's restart
    instead, use :func:`~langgraph_parallel.retry.deadline_retry_policy`. The policy is built
    once; ``from langgraph_parallel.errors import DEFAULT_RETRY_POLICY`` returns it.
    """
    from langgraph.types import RetryPolicy

    return RetryPolicy(
        initial_interval=0.5,
        backoff_factor=2.0,
        max_interval=8.0,
        max_attempts=3,
        retry_on=is_transient,
    )


def retry_now(exc: BaseException, runtime: Any, policy: RetryPolicy | None) -> bool:
    """Return whether a node should re-raise ``exc`` so LangGraph retries it under ``policy``.

    True only for a transient error that ``policy``'s own ``retry_on`` also retries, with
    attempts left: an error re-raised that LangGraph then does not retry would end the whole
    run. The attempt number comes from ``runtime.execution_info`` (LangGraph 1.1+); without it
    the node reports the error at once rather than risk raising on the last attempt.
    """
    if policy is None or not is_transient(exc) or not _retried_by(policy, exc):
        return False
    info = getattr(runtime, "execution_info", None)
    attempt = getattr(info, "node_attempt", None)
    return isinstance(attempt, int) and attempt < policy.max_attempts


def _retried_by(policy: RetryPolicy, exc: BaseException) -> bool:
    """Whether LangGraph retries ``exc`` under ``policy`` by its ``retry_on``."""
    rule = policy.retry_on
    if isinstance(rule, Sequence):
        return isinstance(exc, tuple(rule))
    if isinstance(rule, type):
        return isinstance(exc, rule)
    return bool(rule(exc))  # type: ignore[arg-type]


def reported_error(exc: Exception, runtime: Any = None, policy: RetryPolicy | None = None) -> str:
    """Return the text a node reports for ``exc``, or re-raise ``exc`` when it must not.

    The one failure rule of every node: a :class:`UserError` is re-raised (a set-up problem the
    caller has to see), so is a transient error while ``policy`` has attempts left
    (:func:`retry_now`, so the node's ``RetryPolicy`` retries it); anything else comes back as
    :func:`describe_error` text for the node to put in its report.
    """
    if isinstance(exc, UserError) or retry_now(exc, runtime, policy):
        raise exc
    return describe_error(exc)


def call_with_retry(
    call: Callable[[], _T],
    policy: RetryPolicy | None,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> _T:
    """Run ``call``, retrying transient errors the way ``policy`` retries a node.

    For clients that retry single requests with a policy of their own (Tavily's rate-limit
    backoff, which is longer than the nodes'); graph nodes are retried by their ``RetryPolicy``.
    Delays follow LangGraph's node retries: ``initial_interval * backoff_factor**n`` capped at
    ``max_interval``, plus up to 1 s when ``jitter`` is set.
    """
    attempts = policy.max_attempts if policy else 1
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if policy is None or attempt == attempts or not is_transient(exc):
                raise
            delay = min(
                policy.max_interval,
                policy.initial_interval * policy.backoff_factor ** (attempt - 1),
            )
            sleep(delay + (random.uniform(0.0, 1.0) if policy.jitter else 0.0))
    raise AssertionError("unreachable")  # pragma: no cover


def _secrets(extra: Iterable[str | None] = ()) -> list[str]:
    values = [os.environ.get(name) for name in SECRET_ENV_VARS]
    # Short values ("EMPTY", "x") would blank out ordinary words; real keys are long.
    found = {v for v in [*values, *extra] if v and len(v) >= 8}
    return sorted(found, key=len, reverse=True)


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """Replace secret values (:data:`SECRET_ENV_VARS` and ``extra``) in ``text`` with ``***``."""
    for secret in _secrets(extra):
        text = text.replace(secret, "***")
    return text


def describe_error(exc: BaseException, extra_secrets: Iterable[str | None] = ()) -> str:
    """Return ``"{type}: {message}"`` for reports, with secrets removed and text cleaned."""
    return clean_text(redact(f"{type(exc).__name__}: {exc}", extra_secrets))


_INT_RANGE = (-(2**63), 2**64 - 1)
"""Integers msgpack (the checkpointers' serializer) can store."""


def storable(value: Any) -> Any:
    """Return parsed model output (e.g. tool-call args) in a form every checkpointer can store.

    A model can write anything: an integer beyond 64 bits made msgpack raise and killed the run.
    Such integers become their decimal string, strings are cleaned (:func:`clean_text`), mapping
    keys become strings, tuples lists, and any other object its ``repr``.
    """
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if _INT_RANGE[0] <= value <= _INT_RANGE[1] else str(value)
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    return clean_text(repr(value))


def clean_text(text: str) -> str:
    r"""Replace lone surrogates (invalid in UTF-8) with U+FFFD; other characters are kept.

    A client decoding JSON ``"\\ud800"`` escapes hands such strings on; they would make the
    checkpointer's serializer or a UTF-8 results file raise far from the cause.
    """
    return _LONE_SURROGATE.sub("\ufffd", text)
