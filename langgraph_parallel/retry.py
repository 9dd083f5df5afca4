"""Retrying until a deadline, so that a model server's restart costs latency, not answers.

:data:`~langgraph_parallel.errors.DEFAULT_RETRY_POLICY` gives up after about 1.5 s of waiting:
right for a dropped connection, too short for a vLLM server that restarts (15-40 s before it
takes connections again), so the questions in flight end with ``model_error``.
:func:`deadline_retry_policy` returns the LangGraph :class:`~langgraph.types.RetryPolicy` that
keeps retrying the same errors (:func:`~langgraph_parallel.errors.is_transient`: refused or
reset connections, connect timeouts, HTTP 429 and 5xx such as a starting server's 502/503) with
exponential backoff until a deadline. It is a plain ``RetryPolicy``, run by LangGraph's own node
retries; every graph factory takes it as ``retry_policy=``, and ``ask`` and ``bench`` build it
from ``--retry-deadline SECONDS``.

Why a computed attempt count, not a clock: a ``RetryPolicy`` has no deadline field, and a node
that checked a clock itself would be a second retry loop beside LangGraph's. The schedule of
waits is known in advance, so the deadline becomes ``max_attempts``; :func:`retry_waits` gives
the least and most waiting a policy allows, so the arithmetic can be checked.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from langgraph_parallel.errors import is_transient

if TYPE_CHECKING:
    from langgraph.types import RetryPolicy

__all__ = ["JITTER_S", "MOST_RETRIES", "deadline_retry_policy", "retry_waits"]

JITTER_S = 1.0
"""Most seconds LangGraph adds to a wait when ``jitter`` is on (a uniform draw from 0 to 1)."""

MOST_RETRIES = 1000
"""Most retries :func:`deadline_retry_policy` schedules; a deadline needing more is refused
(raise ``max_interval``). With the defaults that is a deadline of over 5000 s."""


def _wait(initial: float, factor: float, cap: float, n: int) -> float | None:
    """LangGraph's wait before retry ``n`` (0-based), jitter aside; ``None`` where it overflows.

    LangGraph computes ``factor ** n`` even when the cap applies, and a float power past the
    float range raises ``OverflowError`` in its retry loop: such a retry must not be scheduled.
    """
    try:
        return min(cap, initial * factor**n)
    except OverflowError:
        return None


def retry_waits(policy: RetryPolicy) -> tuple[float, float]:
    """Return the least and most seconds ``policy`` waits, in all, before its last attempt.

    LangGraph waits ``min(max_interval, initial_interval * backoff_factor ** (n - 1))`` seconds
    after failed attempt ``n``, plus up to :data:`JITTER_S` when ``jitter`` is on; the least
    counts no jitter, the most a full :data:`JITTER_S` per wait. The time of the attempts
    themselves is not included.
    """
    least = most = 0.0
    jitter = JITTER_S if policy.jitter else 0.0
    for n in range(policy.max_attempts - 1):
        wait = _wait(policy.initial_interval, policy.backoff_factor, policy.max_interval, n)
        interval = policy.max_interval if wait is None else wait
        least += interval
        most += interval + jitter  # summed in this order by deadline_retry_policy too
    return least, most


def deadline_retry_policy(
    deadline_s: float,
    *,
    initial_interval: float = 0.5,
    backoff_factor: float = 2.0,
    max_interval: float = 5.0,
    jitter: bool = True,
) -> RetryPolicy:
    """Return a node retry policy that retries transient errors for up to ``deadline_s`` of waiting.

    Exact semantics. After failed attempt ``n`` LangGraph waits
    ``min(max_interval, initial_interval * backoff_factor ** (n - 1))`` seconds, plus a uniform
    draw of up to :data:`JITTER_S` (1 s) when ``jitter`` is on. ``max_attempts`` is the
    largest count whose waits, each taken at its longest (the full second of jitter counted),
    add up to at most ``deadline_s``. So, per node run:

    * the waiting before the last attempt never exceeds ``deadline_s``, jitter included;
    * it is at least ``retry_waits(policy)[0]``, which is more than
      ``deadline_s - max_interval - (retries + 1) * JITTER_S`` with jitter on and more than
      ``deadline_s - max_interval`` without: a server that accepts connections again within
      that time gets the question answered (with the defaults and ``deadline_s=60``: at
      least 47.5 s, at most 59.5 s; without jitter exactly 57.5 s);
    * the failing attempts' own time comes on top of the waiting: a refused connection fails
      in milliseconds, but the client may retry inside each attempt (the ``openai`` client's
      ``max_retries``, 2 by default, about 0.5-1 s each) and a connect timeout lasts the
      client's ``timeout``;
    * once the server is back, a waiting question starts its next attempt within
      ``max_interval`` (+ jitter) seconds: the latency a restart costs beyond its own length.

    The first waits are :data:`~langgraph_parallel.errors.DEFAULT_RETRY_POLICY`'s (0.5 s, 1 s).
    Which errors are retried is :func:`~langgraph_parallel.errors.is_transient`, as for the
    default; every other error is reported at once, and so is a transient one on the last
    attempt (``model_error: ...`` for a model call, see :mod:`~langgraph_parallel.errors`).
    The policy applies to every node a factory gives ``retry_policy`` to: the model steps and
    also ``search`` (a search service restarting is ridden out the same way).

    Args:
        deadline_s: Seconds of waiting between attempts, at most; ``0``: one attempt, no retry.
        initial_interval: Seconds before the first retry.
        backoff_factor: Each wait is this times the one before (>= 1), up to ``max_interval``.
        max_interval: The longest wait, jitter aside.
        jitter: Add LangGraph's random 0-1 s to each wait, so that many questions failing
            together do not all retry at the same instant.

    Returns:
        A ``RetryPolicy`` for ``retry_policy=`` of the graph factories.

    Raises:
        ValueError: A deadline that is not a finite number >= 0, an interval that is not > 0,
            a ``backoff_factor`` below 1, or a deadline needing more than :data:`MOST_RETRIES`
            retries.

    Example:
        >>> policy = deadline_retry_policy(60)
        >>> policy.max_attempts, retry_waits(policy)
        (13, (47.5, 59.5))
    """
    if not (math.isfinite(deadline_s) and deadline_s >= 0):
        raise ValueError(f"deadline_s must be a finite number of seconds >= 0, got {deadline_s!r}.")
    for name, value in (("initial_interval", initial_interval), ("max_interval", max_interval)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}.")
    if not (math.isfinite(backoff_factor) and backoff_factor >= 1):
        raise ValueError(f"backoff_factor must be >= 1, got {backoff_factor!r}.")
    jitter_s = JITTER_S if jitter else 0.0
    retries, most = 0, 0.0
    # Each wait is >= min(initial_interval, max_interval) > 0, so the count is finite; the
    # bound keeps a tiny interval under a huge deadline from scheduling thousands of retries.
    while True:
        wait = _wait(initial_interval, backoff_factor, max_interval, retries)
        if most + (max_interval if wait is None else wait) + jitter_s > deadline_s:
            break
        if wait is None or retries == MOST_RETRIES:
            raise ValueError(
                f"deadline_s={deadline_s:g} needs more than {retries} retries; raise "
                f"max_interval (now {max_interval:g} s) so that fewer waits fill it."
            )
        most += wait + jitter_s
        retries += 1
    from langgraph.types import RetryPolicy  # at first use: see errors.default_retry_policy

    return RetryPolicy(
        initial_interval=initial_interval,
        backoff_factor=backoff_factor,
        max_interval=max_interval,
        max_attempts=retries + 1,
        jitter=jitter,
        retry_on=is_transient,
    )
