"""Distinct branches, the pure part: which candidate steps explore, and how many forks each gets.

With ``MuseContext.branch_candidates`` set, a branch point's forks do not each sample their own
step: one call draws that many candidates (:mod:`.candidates`), and a candidate is kept only if
its action differs from the parent's step there and from every candidate kept before it. Two
actions are the same when :func:`action_key` says so: the same kind and, for a search, the same
set of sub-queries, normalised as answers are scored (lower case, no punctuation or articles,
spaces squashed: :func:`~langgraph_parallel.metrics.normalize_answer`); for an answer, the same
normalised answer; every invalid step is one action. The same key counts, in the accounting,
the forks that made their parent's step again (:func:`repeats_parent`).

A point keeps at most the forks the plan gave it (:func:`~.plan.shares`); when it has fewer
distinct candidates, :func:`deal` gives its missing forks to the round's other points that have
more, the most uncertain first, as the plan gives a missing point's samples to the points it
found; what no point can take goes where unspent budget goes (:mod:`.plan`): fresh rollouts
after the last round, else the next round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from langgraph_parallel.agent.step import read_step
from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.protocol import Action, parse_action

__all__ = [
    "ActionKey",
    "action_key",
    "deal",
    "keep_distinct",
    "reply_key",
    "repeats_parent",
    "step_key",
]

ActionKey = tuple[str, Any]
"""What makes two steps the same action (:func:`action_key`)."""
_Reply = TypeVar("_Reply", bound=BaseMessage)


def action_key(action: Action) -> ActionKey:
    """Return what identifies ``action`` as an exploration (module docstring)."""
    if action.kind == "search":
        return ("search", frozenset(normalize_answer(q) for q in action.queries))
    if action.kind == "answer":
        return ("answer", normalize_answer(action.answer or ""))
    return ("invalid", None)


def step_key(step: Mapping[str, Any]) -> ActionKey:
    """Return the :func:`action_key` of a trajectory's step (its text and tool calls)."""
    return action_key(parse_action(str(step.get("text") or ""), step.get("tool_calls") or None))


def reply_key(reply: BaseMessage) -> ActionKey:
    """Return the :func:`action_key` of a model reply, read as the loop reads a step."""
    return action_key(read_step(reply).action)


def keep_distinct(
    replies: Iterable[_Reply], exclude: Iterable[ActionKey], limit: int
) -> list[_Reply]:
    """Return up to ``limit`` of ``replies``, in order, each an action not seen before.

    Seen are the actions of ``exclude`` (the parent's step) and of the replies kept already.
    """
    seen = set(exclude)
    kept: list[_Reply] = []
    for reply in replies:
        if len(kept) >= limit:
            break
        key = reply_key(reply)
        if key not in seen:
            seen.add(key)
            kept.append(reply)
    return kept


def deal(shares: Sequence[int], caps: Sequence[int]) -> list[int]:
    """Give each point at most ``caps[i]`` forks of the round's ``sum(shares)`` (module doc).

    Each point first gets its share, or its cap if smaller; the forks left over go one more each
    in turn, the most uncertain point (the first) first, to points below their cap.
    """
    out = [min(share, cap) for share, cap in zip(shares, caps, strict=True)]
    left = sum(shares) - sum(out)
    while left > 0 and any(n < cap for n, cap in zip(out, caps, strict=True)):
        for i, cap in enumerate(caps):
            if left > 0 and out[i] < cap:
                out[i] += 1
                left -= 1
    return out


def repeats_parent(fork: Mapping[str, Any], parent: Mapping[str, Any]) -> bool:
    """Whether ``fork``'s first own step is the action of ``parent``'s step it re-generated."""
    step = fork.get("branch_step")
    if step is None:
        return False
    own, theirs = list(fork.get("steps") or []), list(parent.get("steps") or [])
    if len(own) <= step or len(theirs) <= step or own[step].get("origin") != fork.get("id"):
        return False
    return step_key(own[step]) == step_key(theirs[step])
