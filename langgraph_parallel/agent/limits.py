"""Step and recursion limits of the agent loop.

``think`` bounds the loop by ``max_turns`` itself; LangGraph's ``recursion_limit`` is only a
safety net, so the defaults here are generous and a run near the limit ends with a stated
``stop_reason`` instead of a ``GraphRecursionError``.
"""

from __future__ import annotations

__all__ = [
    "MIN_RECURSION_LIMIT",
    "STEPS_PER_TURN",
    "STEPS_TO_ANSWER",
    "STEPS_TO_SEARCH",
    "max_turns_reason",
    "recursion_limit_for",
    "recursion_reason",
]

STEPS_PER_TURN = 4
"""Super-steps of one search turn: ``think``, ``fan_out``, ``search``, ``observe``."""

# A node running with ``remaining_steps == r`` may hand over to a node that then runs with
# ``r - 1``; the run's last node needs ``remaining_steps >= 1`` or LangGraph raises
# GraphRecursionError. So ``answer`` after this step needs 2, and a search turn needs its four
# steps plus a last ``think`` and ``answer``: the room the final answer-only step after a
# search at step ``max_turns`` runs in (``ThinkNode``).
STEPS_TO_ANSWER = 2
STEPS_TO_SEARCH = STEPS_PER_TURN + STEPS_TO_ANSWER


MIN_RECURSION_LIMIT = 100
"""Floor of the default ``recursion_limit``: per-run ``max_turns`` up to 24 still fit (with the
final answer-only step; 25 without it)."""


def recursion_limit_for(max_turns: int) -> int:
    """Return a default ``recursion_limit`` with room for ``max_turns`` turns and the answer.

    The longest run searches at every one of its ``max_turns`` steps, then makes the final
    answer-only step and ends: ``max_turns`` turns of :data:`STEPS_PER_TURN` super-steps, a last
    ``think`` and ``answer`` (:data:`STEPS_TO_ANSWER`). ``think`` bounds the loop by
    ``max_turns`` itself, so the limit is only a safety net and is generous: a few steps of
    slack (a ParallelMuse rollout's ``start`` node) and at least :data:`MIN_RECURSION_LIMIT`, so
    a per-run ``max_turns`` a little over the build-time one still fits.
    """
    needed = STEPS_PER_TURN * max_turns + STEPS_TO_ANSWER + 4
    return max(MIN_RECURSION_LIMIT, needed)


def max_turns_reason(max_turns: int) -> str:
    """Return the ``stop_reason`` of a run that used its ``max_turns`` steps without an answer."""
    return f"max_turns: {max_turns} model steps used without an answer"


def recursion_reason(steps: int) -> str:
    """Return the ``stop_reason`` of a run the ``recursion_limit`` ended after ``steps`` steps."""
    return (
        f"recursion_limit: too few graph steps left for another turn after {steps} model "
        "steps; raise config['recursion_limit'] (or lower max_turns)"
    )
