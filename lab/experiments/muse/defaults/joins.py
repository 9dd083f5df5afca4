"""The defaults run's tables: every join on the same trajectories, paired, and the user's cost.

:func:`analyse` reads the rows of both graphs on the same questions (``parallel-muse`` and
``rollouts-majority``) and returns what ``joins.json`` holds: EM of every join on the same
trajectories (the graph's own default join, majority, weighted, evidence), of the first rollout
and of any trajectory, the paired 95% bootstrap intervals the issue asks for, join candidates
scored offline from each row's ``join_inputs`` (e.g. the most confident trajectory alone), how
often answers are found in the passages their trajectory read, and the cost a user pays (agent +
reduction, the cache warm). :mod:`.page` renders it as ``joins.md``; :mod:`.defaults` runs it.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lab.experiments.muse.defaults.answer_type import MISMATCH_WEIGHT, is_answer, typed
from lab.experiments.muse.defaults.forks import forks_and_divergence, trajectories
from lab.experiments.muse.defaults.scorer import cross_validated, examples
from lab.paired import paired_by_id
from langgraph_parallel.apps.registry import INDEPENDENT, PARTIAL
from langgraph_parallel.eval.summary import mean_of
from langgraph_parallel.metrics import normalize_answer

__all__ = ["COSTS", "JOINS", "OFFLINE", "against", "analyse", "mixtures", "ratio_interval"]

JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_join_evidence")
COSTS = (
    *("agent_cost", "reduction_cost", "agent_uncached_prefill", "agent_generated"),
    *("agent_cached_prefill", "llm_calls", "trajectories", "forks"),
)
Inputs = Sequence[Mapping[str, Any]]


def _vote(inputs: Inputs, weight: Callable[[Mapping[str, Any]], float]) -> float:
    votes: dict[str, float] = {}
    first: dict[str, Mapping[str, Any]] = {}
    for t in inputs:
        if t["answer"]:
            key = normalize_answer(t["answer"])
            votes[key] = votes.get(key, 0.0) + weight(t)
            first.setdefault(key, t)
    return float(first[max(votes, key=lambda k: votes[k])]["em"]) if votes else 0.0


def _confidence(t: Mapping[str, Any]) -> float:
    return 1.0 if t["confidence"] is None else float(t["confidence"])


def _most_confident(inputs: Inputs) -> float:
    answered = [t for t in inputs if t["answer"]]
    return float(max(answered, key=_confidence)["em"]) if answered else 0.0


def _answers_only(inputs: Inputs, question: str) -> float:
    """Return the EM of a majority of the answers that are answers (all when none is)."""
    kept = [t for t in inputs if t["answer"] and is_answer(t["answer"], question)]
    return _vote(kept or inputs, lambda t: 1.0)


def _typed(inputs: Inputs, question: str) -> float:
    """Return the EM of a vote that quarter-weights an answer of another kind than asked."""
    return _vote(
        inputs, lambda t: MISMATCH_WEIGHT if typed(t["answer"], question) is False else 1.0
    )


OFFLINE: dict[str, Callable[[Inputs, str], float]] = {
    "first rollout": lambda ins, q: float(ins[0]["em"]) if ins else 0.0,
    "majority": lambda ins, q: _vote(ins, lambda t: 1.0),
    "evidence": lambda ins, q: _vote(ins, lambda t: 0.5 if t["supported"] is False else 1.0),
    "confidence-weighted": lambda ins, q: _vote(ins, _confidence),
    "most confident alone": lambda ins, q: _most_confident(ins),
    "answers only": _answers_only,
    "typed": _typed,
    "any right": lambda ins, q: max((float(t["em"]) for t in ins), default=0.0),
}
"""Joins scored from each row's ``join_inputs`` and question (:mod:`.answer_type` has the two
that read what an answer is; ``vs_offline`` pairs those two with the first rollout)."""


def _scores(rows: Sequence[Mapping[str, Any]], graph: str, key: str) -> dict[str, float]:
    return {r["id"]: float(r.get(key) or 0.0) for r in rows if r["graph"] == graph}


def _diff(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, Any]:
    return dataclasses.asdict(paired_by_id(a, b))


def analyse(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the tables of ``joins.md`` for the questions both graphs answered."""
    both = {r["id"] for r in rows if r["graph"] == PARTIAL} & {
        r["id"] for r in rows if r["graph"] == INDEPENDENT
    }
    rows = [r for r in rows if r["id"] in both]
    out: dict[str, Any] = {
        "n": len(both),
        **{k: {} for k in ("em", "offline", "vs_offline", "vs", "cost")},
    }
    for g in (PARTIAL, INDEPENDENT):
        out["em"][g] = {
            k: sum(_scores(rows, g, k).values()) for k in (*JOINS, "em_single", "em_any")
        }
        inputs = {r["id"]: (r["join_inputs"], r["question"]) for r in rows if r["graph"] == g}
        scored = {n: {q: fn(*i) for q, i in inputs.items()} for n, fn in OFFLINE.items()}
        out["offline"][g] = {n: sum(ems.values()) for n, ems in scored.items()}
        out["vs_offline"][g] = {
            f"{n} - first rollout": _diff(scored[n], scored["first rollout"])
            for n in ("answers only", "typed")
        }
        found = [t["supported"] for i, _ in inputs.values() for t in i]
        out["offline"][g]["supported"] = [found.count(True), found.count(False), found.count(None)]
        graph_rows = [r for r in rows if r["graph"] == g]
        out["cost"][g] = {k: round(mean_of(graph_rows, k), 1) for k in COSTS}
        cost = out["cost"][g]
        cost["user_cost"] = round(cost["agent_cost"] + cost["reduction_cost"], 1)
        cost["model_errors"] = sum("model_error" in str(r.get("stop_reason")) for r in graph_rows)
        # Trajectories that answered over a trimmed transcript (a full context), prompts the
        # engine refused (none can be: ChatVLLM declares its window), and sub-queries not
        # searched again (the repeat rule, from 836646c on: rows before it have none).
        for key in ("trimmed_steps", "context_refusals", "repeat_skips"):
            cost[key] = sum(int(r.get(key) or 0) for r in graph_rows)
    best = max(JOINS[1:], key=lambda k: out["em"][INDEPENDENT][k])
    m = {k: _scores(rows, PARTIAL, k) for k in (*JOINS, "em_single", "em_any")}
    # The graph's default join: select at the 25 questions' commits, join="auto" (majority
    # for the raw-prompt policy) from bc574da on. The rows do not name it; only select calls
    # the analyst (reduction calls), on every question whose trajectories disagree.
    muse_rows = [r for r in rows if r["graph"] == PARTIAL]
    joined = "select" if any(r.get("reduction_calls") for r in muse_rows) else "majority"
    out["graph_join"] = joined
    independent = _scores(rows, INDEPENDENT, best)
    out["vs"] = {
        f"the graph's join ({joined}) - first rollout": _diff(m["em_join_graph"], m["em_single"]),
        "majority - first rollout": _diff(m["em_join_majority"], m["em_single"]),
        "evidence - first rollout": _diff(m["em_join_evidence"], m["em_single"]),
        f"the graph's join ({joined}) - independent {best}": _diff(m["em_join_graph"], independent),
        f"majority - independent {best}": _diff(m["em_join_majority"], independent),
    }
    out["forks"] = forks_and_divergence(rows)
    out["mixtures"] = mixtures(rows)
    out["learned"] = {}
    for g in (PARTIAL, INDEPENDENT):
        per_question = {
            r["id"]: examples(r, trajectories(r.get("tree") or "")) for r in rows if r["graph"] == g
        }
        learned = cross_validated(per_question)
        first = _scores(rows, g, "em_single")
        out["learned"][g] = {
            name: _diff(ems, {q: first[q] for q in ems}) for name, ems in learned.items()
        }
    out["cost"].update(_cost_ratios(rows, out["cost"]))
    return out


def _cost_ratios(rows: Sequence[Mapping[str, Any]], cost: Mapping[str, Any]) -> dict[str, Any]:
    """Partial over independent rollouts: the user's and the agent's cost, with intervals."""
    agent = {g: _scores(rows, g, "agent_cost") for g in (PARTIAL, INDEPENDENT)}
    reduction = {g: _scores(rows, g, "reduction_cost") for g in (PARTIAL, INDEPENDENT)}
    user = {g: {q: c + reduction[g].get(q, 0.0) for q, c in agent[g].items()} for g in agent}
    return {
        "user_ratio": round(cost[PARTIAL]["user_cost"] / cost[INDEPENDENT]["user_cost"], 3),
        "agent_ratio": round(cost[PARTIAL]["agent_cost"] / cost[INDEPENDENT]["agent_cost"], 3),
        "agent_ratio_interval": ratio_interval(agent[PARTIAL], agent[INDEPENDENT]),
        "user_ratio_interval": ratio_interval(user[PARTIAL], user[INDEPENDENT]),
    }


def mixtures(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the majority over the first rollout, its first ``k`` forks and fresh rollouts.

    ParallelMuse's trajectory ``i`` and independent rollout ``i`` sample with the same seed
    (``seed + i``; the two first rollouts ended on the same answer on 148 of the 150 questions of
    ``hotpotqa150-pairs/``), so ParallelMuse's ``t0..tk`` with the independent ``t(k+1)..t7`` are
    the trajectories of a round that forks ``k`` and gives the rest of the budget to fresh
    rollouts (``--top-k-steps 1 --samples-per-step k``), up to the engine's batching. This scores
    every split of the budget between forks and fresh rollouts without a run each: ``k`` 0 is the
    independent rollouts (but for the first rollout), 7 ParallelMuse's default. Each entry:
    ``k``, majority and any-right counts, and the majority paired with the independent
    rollouts' majority.
    """
    muse = {r["id"]: r["join_inputs"] for r in rows if r["graph"] == PARTIAL}
    roll = {r["id"]: r["join_inputs"] for r in rows if r["graph"] == INDEPENDENT}
    asked = sorted(set(muse) & set(roll))
    independent = {q: _vote(roll[q], lambda t: 1.0) for q in asked}
    ids = [f"t{i}" for i in range(8)]
    forked = {q: {t["id"]: t for t in muse[q]} for q in asked}
    fresh = {q: {t["id"]: t for t in roll[q]} for q in asked}
    out = []
    for k in range(8):
        majority: dict[str, float] = {}
        right = 0.0
        for q in asked:
            inputs = [forked[q][i] for i in ids[: k + 1] if i in forked[q]]
            inputs += [fresh[q][i] for i in ids[k + 1 :] if i in fresh[q]]
            majority[q] = _vote(inputs, lambda t: 1.0)
            right += max((float(t["em"]) for t in inputs), default=0.0)
        out.append(
            {
                "k": k,
                "majority": sum(majority.values()),
                "any_right": right,
                "vs_independent": _diff(majority, independent),
            }
        )
    return out


def ratio_interval(
    a: Mapping[str, float], b: Mapping[str, float], *, reps: int = 10_000, seed: int = 0
) -> list[float]:
    """Return ``[sum(a) / sum(b), low, high]``: a 95% bootstrap over the questions both have.

    The committed ``joins.json`` files' own rule (its upper end one resample above
    :func:`lab.paired.paired_ratio`'s), kept so that re-analysing their rows gives their
    figures.
    """
    ids = sorted(set(a) & set(b))
    rng = random.Random(seed)
    ratios = []
    for _ in range(reps):
        pick = rng.choices(ids, k=len(ids))
        ratios.append(sum(a[i] for i in pick) / max(sum(b[i] for i in pick), 1e-9))
    ratios.sort()
    point = sum(a[i] for i in ids) / sum(b[i] for i in ids)
    return [
        round(point, 3),
        round(ratios[int(0.025 * (reps - 1))], 3),
        round(ratios[-1 - int(0.025 * (reps - 1))], 3),
    ]


def against(
    rows: Sequence[Mapping[str, Any]], before: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Compare this run's ParallelMuse rows with an earlier run's on the same questions.

    Paired: EM of the graph's join, of the first rollout and of any trajectory (differences),
    the agent cost (the ratio of this run's to the earlier run's, with its interval) and forks.
    """
    now = [r for r in rows if r["graph"] == PARTIAL]
    asked = {r["id"] for r in now}
    then = [r for r in before if r["graph"] == PARTIAL and r["id"] in asked]
    both = {r["id"] for r in then}
    now = [r for r in now if r["id"] in both]
    out: dict[str, Any] = {
        key: _diff(_scores(now, PARTIAL, key), _scores(then, PARTIAL, key))
        for key in ("em_join_graph", "em_single", "em_any")
    }
    out["agent_cost_ratio"] = ratio_interval(
        _scores(now, PARTIAL, "agent_cost"), _scores(then, PARTIAL, "agent_cost")
    )
    out["forks"] = [round(mean_of(now, "forks"), 2), round(mean_of(then, "forks"), 2)]
    return out
