"""A ParallelMuse row's tree read back: each trajectory's steps, and where forks save work.

The defaults run's rows keep each question's tree as Mermaid text (``tree``,
:func:`~langgraph_parallel.parallel_muse.tree.mermaid_tree`); :func:`trajectories` reads every
trajectory's own steps, fork origin and answer back from it, :func:`forks_and_divergence`
counts what the forks share with their parents (issue 55, item 2), and the learned join
(:mod:`.scorer`) takes its step features from the same reading.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.metrics import normalize_answer

__all__ = ["forks_and_divergence", "trajectories"]

STEP = re.compile(
    r'\["(t\d+) step (\d+): (\w+)<br/>(.*?)<br/>'
    r"ppl: reasoning ([0-9.]+)(?:, exploration ([0-9.]+))?"
)
END = re.compile(r'\["(t\d+)(?: \(fork of (t\d+) at step (\d+)\))?<br/>answer: (.*?)(?:<br/>|"\])')


def trajectories(tree: str) -> dict[str, dict[str, Any]]:
    """Read each trajectory's own steps, fork origin and answer from a row's ``tree`` drawing.

    Steps are ``(action, text, reasoning perplexity)``; a fork lists only the steps it made
    (from its branch step on) and names its ``parent`` and ``branch_step``. ``exploration``
    holds each step's exploration perplexity (the default branch-point region's; 0.0 for a
    step without a search).
    """
    out: dict[str, dict[str, Any]] = {}
    for tid, _, action, text, ppl, explore in STEP.findall(tree):
        t = out.setdefault(
            tid, {"steps": [], "exploration": [], "parent": None, "branch_step": None}
        )
        t["steps"].append((action, html.unescape(text), float(ppl)))
        t["exploration"].append(float(explore or 0.0))
    for tid, parent, step, answer in END.findall(tree):
        t = out.setdefault(
            tid, {"steps": [], "exploration": [], "parent": None, "branch_step": None}
        )
        t["parent"], t["answer"] = parent or None, normalize_answer(html.unescape(answer))
        t["branch_step"] = int(step) if step else None
    return out


def _full_steps(ts: Mapping[str, Mapping[str, Any]], tid: str) -> list[tuple[str, str, float]]:
    t = ts[tid]
    if t["parent"] is None:
        return list(t["steps"])
    return _full_steps(ts, t["parent"])[: t["branch_step"]] + list(t["steps"])


def forks_and_divergence(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where partial rollouts save work the cache does not (issue 55, item 2), from the trees.

    For the independent rollouts: how many leading steps each later rollout shares with the
    first (the cache already shares their prefill, not their generation). For ParallelMuse:
    the forks' branch steps, forks whose inherited steps repeat a search (a fork inside a
    loop), and how often a fork ends on its parent's answer against how often a later fresh
    rollout ends on the first one's: what a fork adds to the answers a join chooses from.
    """
    shared: list[int] = []
    step0_agree = 0
    fresh_same: list[bool] = []
    fork_same: list[bool] = []
    fork_repeats = 0
    branch_steps: list[int] = []
    in_loop = 0
    top_at_0 = explore_at_0 = 0
    questions = {PARTIAL: 0, INDEPENDENT: 0}
    for r in rows:
        ts = trajectories(r.get("tree") or "")
        if "t0" not in ts:
            continue
        questions[r["graph"]] += 1
        first = _full_steps(ts, "t0")
        if r["graph"] == INDEPENDENT:
            later = [_full_steps(ts, tid) for tid in ts if tid != "t0"]
            for steps in later:
                depth = 0
                while depth < min(len(steps), len(first)) and steps[depth][:2] == first[depth][:2]:
                    depth += 1
                shared.append(depth)
            step0_agree += all(s and first and s[0][:2] == first[0][:2] for s in later)
            continue
        # Strictly above every later step's (a tie is not "most uncertain at step 0"): by
        # reasoning perplexity, and by the default region's (exploration), which ranks forks.
        top_at_0 += len(first) > 1 and first[0][2] > max(p for _, _, p in first[1:])
        explore = ts["t0"]["exploration"]
        explore_at_0 += len(explore) > 1 and explore[0] > max(explore[1:])
        for tid, t in ts.items():
            if tid == "t0":
                continue
            if t["parent"] is None:
                fresh_same.append(t.get("answer") == ts["t0"].get("answer"))
                continue
            branch_steps.append(t["branch_step"])
            fork_same.append(t.get("answer") == ts[t["parent"]].get("answer"))
            # The fork's first own step is its parent's again (same action and text): at the
            # branch point it sampled what the parent did, so it explores nothing new there.
            parents = _full_steps(ts, t["parent"])
            step = t["branch_step"]
            fork_repeats += (
                bool(t["steps"])
                and len(parents) > step
                and (t["steps"][0][:2] == parents[step][:2])
            )
            before = parents[:step]
            inherited = [text for action, text, _ in before if action == "search"]
            in_loop += len(inherited) != len(set(inherited))
    return {
        "questions": questions,
        "independent_shared_steps": round(sum(shared) / max(len(shared), 1), 2),
        "independent_step0_all_same": step0_agree,
        "fork_branch_steps": {str(k): branch_steps.count(k) for k in sorted(set(branch_steps))},
        "forks": len(fork_same),
        "forks_on_parents_answer": sum(fork_same),
        "forks_repeating_parents_step": fork_repeats,
        "fresh_rollouts": len(fresh_same),
        "fresh_on_firsts_answer": sum(fresh_same),
        "forks_inside_a_loop": in_loop,
        "first_rollouts_most_uncertain_at_step_0": top_at_0,
        "first_rollouts_most_uncertain_exploration_at_step_0": explore_at_0,
    }
