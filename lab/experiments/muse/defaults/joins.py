"""ParallelMuse under its defaults against 8 independent rollouts: joins and the user's cost.

Reads ``hotpotqa/`` (``run.sh``'s rows: both graphs, the same questions) and writes
``joins.json`` and ``joins.md``: EM of every join on the same trajectories (the graph's own
default join, majority, weighted, evidence), of the first rollout and of any trajectory, the paired
95% bootstrap intervals the issue asks for, join candidates scored offline from each row's
``join_inputs`` (e.g. the most confident trajectory alone), how often answers are found in the
passages their trajectory read, and the cost a user pays (agent + reduction, the cache warm).
Run from the repository root: ``.venv/bin/python benchmarks/parallel_muse/defaults/analyse.py``.
"""

from __future__ import annotations

import dataclasses
import html
import json
import random
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from answer_type import MISMATCH_WEIGHT, is_answer, typed  # this folder's (run as a script)
from scorer import FEATURES, cross_validated, examples

from lab.paired import paired_by_id
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.eval.summary import mean_of
from langgraph_parallel.metrics import normalize_answer

HERE = Path(__file__).resolve().parent
MUSE, ROLL = "parallel-muse", "rollouts-majority"
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
"""Joins scored from each row's ``join_inputs`` and question (``answer_type.py`` has the two
that read what an answer is; ``vs_offline`` pairs those two with the first rollout)."""


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
    questions = {MUSE: 0, ROLL: 0}
    for r in rows:
        ts = trajectories(r.get("tree") or "")
        if "t0" not in ts:
            continue
        questions[r["graph"]] += 1
        first = _full_steps(ts, "t0")
        if r["graph"] == ROLL:
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


def _scores(rows: Sequence[Mapping[str, Any]], graph: str, key: str) -> dict[str, float]:
    return {r["id"]: float(r.get(key) or 0.0) for r in rows if r["graph"] == graph}


def _diff(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, Any]:
    return dataclasses.asdict(paired_by_id(a, b))


def analyse(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the tables of ``joins.md`` for the questions both graphs answered."""
    both = {r["id"] for r in rows if r["graph"] == MUSE} & {
        r["id"] for r in rows if r["graph"] == ROLL
    }
    rows = [r for r in rows if r["id"] in both]
    out: dict[str, Any] = {
        "n": len(both),
        **{k: {} for k in ("em", "offline", "vs_offline", "vs", "cost")},
    }
    for g in (MUSE, ROLL):
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
    best = max(JOINS[1:], key=lambda k: out["em"][ROLL][k])
    m = {k: _scores(rows, MUSE, k) for k in (*JOINS, "em_single", "em_any")}
    # The graph's default join: select at the 25 questions' commits, join="auto" (majority
    # for the raw-prompt policy) from bc574da on. The rows do not name it; only select calls
    # the analyst (reduction calls), on every question whose trajectories disagree.
    muse_rows = [r for r in rows if r["graph"] == MUSE]
    joined = "select" if any(r.get("reduction_calls") for r in muse_rows) else "majority"
    out["graph_join"] = joined
    out["vs"] = {
        f"the graph's join ({joined}) - first rollout": _diff(m["em_join_graph"], m["em_single"]),
        "majority - first rollout": _diff(m["em_join_majority"], m["em_single"]),
        "evidence - first rollout": _diff(m["em_join_evidence"], m["em_single"]),
        f"the graph's join ({joined}) - independent {best}": _diff(
            m["em_join_graph"], _scores(rows, ROLL, best)
        ),
        f"majority - independent {best}": _diff(m["em_join_majority"], _scores(rows, ROLL, best)),
    }
    out["forks"] = forks_and_divergence(rows)
    out["mixtures"] = mixtures(rows)
    out["learned"] = {}
    for g in (MUSE, ROLL):
        per_question = {
            r["id"]: examples(r, trajectories(r.get("tree") or "")) for r in rows if r["graph"] == g
        }
        learned = cross_validated(per_question)
        first = _scores(rows, g, "em_single")
        out["learned"][g] = {
            name: _diff(ems, {q: first[q] for q in ems}) for name, ems in learned.items()
        }
    c = out["cost"]
    c["user_ratio"] = round(c[MUSE]["user_cost"] / c[ROLL]["user_cost"], 3)
    c["agent_ratio"] = round(c[MUSE]["agent_cost"] / c[ROLL]["agent_cost"], 3)
    agent = {g: _scores(rows, g, "agent_cost") for g in (MUSE, ROLL)}
    c["agent_ratio_interval"] = ratio_interval(agent[MUSE], agent[ROLL])
    reduction = {g: _scores(rows, g, "reduction_cost") for g in (MUSE, ROLL)}
    user = {g: {q: cost + reduction[g].get(q, 0.0) for q, cost in agent[g].items()} for g in agent}
    c["user_ratio_interval"] = ratio_interval(user[MUSE], user[ROLL])
    return out


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
    muse = {r["id"]: r["join_inputs"] for r in rows if r["graph"] == MUSE}
    roll = {r["id"]: r["join_inputs"] for r in rows if r["graph"] == ROLL}
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
    """Return ``[sum(a) / sum(b), low, high]``: a 95% bootstrap over the questions both have."""
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
    now = [r for r in rows if r["graph"] == MUSE]
    asked = {r["id"] for r in now}
    then = [r for r in before if r["graph"] == MUSE and r["id"] in asked]
    both = {r["id"] for r in then}
    now = [r for r in now if r["id"] in both]
    out: dict[str, Any] = {
        key: _diff(_scores(now, MUSE, key), _scores(then, MUSE, key))
        for key in ("em_join_graph", "em_single", "em_any")
    }
    out["agent_cost_ratio"] = ratio_interval(
        _scores(now, MUSE, "agent_cost"), _scores(then, MUSE, "agent_cost")
    )
    out["forks"] = [round(mean_of(now, "forks"), 2), round(mean_of(then, "forks"), 2)]
    return out


def _flags(muse: Mapping[str, Any]) -> list[str]:
    """Return ``bench``'s flags for a run's ParallelMuse settings (``run.json``'s ``muse``)."""
    return [f"--{k.replace('_', '-')} {v}" for k, v in muse.items()]


def _settings(muse: Mapping[str, Any]) -> str:
    """Return how the title names a run's ParallelMuse settings (its defaults, or the flags)."""
    if not muse:
        return "under its defaults"
    return "with " + ", ".join(f"`{flag}`" for flag in _flags(muse))


def markdown(result: Mapping[str, Any], command: str) -> str:
    """Render :func:`analyse` as the folder's table page."""
    n = result["n"]
    lines = [
        f"# ParallelMuse {_settings(result.get('muse') or {})} vs 8 independent rollouts "
        f"(HotpotQA bridge, n={n})",
        "",
        f"Rows: `{command}`; tables: `analyse.py`."
        + (
            f" The independent rollouts' rows are those of `{result['rollouts_from']}` (the same "
            "questions; this run made ParallelMuse's only)."
            if result.get("rollouts_from")
            else ""
        ),
        "",
        "| graph | the graph's join | majority | weighted | evidence | first rollout | any right |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in (MUSE, ROLL):
        e = result["em"][g]
        cells = [f"{e[k]:.0f}" for k in (*JOINS, "em_single", "em_any")]
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    lines += ["", f"Questions right of {n}. Paired differences (95% bootstrap):", ""]
    for name, d in result["vs"].items():
        lines.append(
            f"- {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
            f"[{d['low']:+.3f}, {d['high']:+.3f}]"
        )
    lines += ["", "Joins scored offline on the same trajectories (`join_inputs`):", ""]
    for g in (MUSE, ROLL):
        o = result["offline"][g]
        scored = ", ".join(f"{k} {v:.0f}" for k, v in o.items() if k != "supported")
        yes, no, none = o["supported"]
        lines.append(
            f"- {g}: {scored}; answers found in their own passages {yes}, not {no}, "
            f"yes/no or none {none}"
        )
    lines += ["", "The two that read what an answer is, paired with the first rollout:", ""]
    for g in (MUSE, ROLL):
        for name, d in result["vs_offline"][g].items():
            lines.append(
                f"- {g}, {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
                f"[{d['low']:+.3f}, {d['high']:+.3f}]"
            )
    c = result["cost"]
    lines += [
        "",
        "Cost a question (tokens; cost = uncached prefill + generated, "
        + ("the cache emptied before each question" if result.get("fresh_cache") else "cache warm")
        + "); the last",
        "four columns are counts over all the questions:",
        "",
        "| graph | agent | reduction | user (agent + reduction) | uncached prefill | generated "
        "| cached prefill | model calls | trajectories | forks | model errors | trimmed steps "
        "| refused prompts | repeat skips |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in (MUSE, ROLL):
        x = c[g]
        lines.append(
            f"| {g} | {x['agent_cost']} | {x['reduction_cost']} | {x['user_cost']} | "
            f"{x['agent_uncached_prefill']} | {x['agent_generated']} | "
            f"{x['agent_cached_prefill']} | {x['llm_calls']} | {x['trajectories']} | "
            f"{x['forks']} | {x['model_errors']} | {x['trimmed_steps']} | "
            f"{x['context_refusals']} | {x['repeat_skips']} |"
        )
    ratio, low, high = c["agent_ratio_interval"]
    lines += [
        "",
        f"User cost ratio {c['user_ratio']}x, agent cost ratio {c['agent_ratio']}x (ratio of the "
        f"summed agent costs, 95% bootstrap over the questions: {ratio} [{low}, {high}]).",
        "",
    ]
    if "before" in result:
        b = result["before"]
        r, lo, hi = b["agent_cost_ratio"]
        lines += [
            f"Against the earlier run in `{b['folder']}` (ParallelMuse rows, the same questions, "
            "paired, 95% bootstrap): agent cost "
            f"{r}x [{lo}, {hi}], forks a question {b['forks'][0]} vs {b['forks'][1]}; "
            + "; ".join(
                f"{k.replace('em_', '')} {b[k]['a']:.3f} vs {b[k]['b']:.3f}: "
                f"{b[k]['diff']:+.3f} [{b[k]['low']:+.3f}, {b[k]['high']:+.3f}]"
                for k in ("em_join_graph", "em_single", "em_any")
            )
            + ".",
            "",
        ]
    f = result["forks"]
    steps = ", ".join(f"step {k}: {v}" for k, v in f["fork_branch_steps"].items())
    lines += [
        "Where forks save work (read from each row's `tree`; issue 55, item 2):",
        "",
        f"- Independent rollouts share {f['independent_shared_steps']} leading steps with the "
        f"first on average (same action and text); all 8 take the first's step 0 on "
        f"{f['independent_step0_all_same']} of {f['questions'][ROLL]} questions. The cache "
        "already shares a shared step's prefill; a fork saves only its generation.",
        f"- ParallelMuse's {f['forks']} forks branch at {steps}; {f['forks_inside_a_loop']} "
        "inherit a repeated search (a fork inside a loop).",
        f"- A fork ends on its parent's answer {f['forks_on_parents_answer']} of {f['forks']} "
        f"times; a later fresh rollout on the first rollout's {f['fresh_on_firsts_answer']} of "
        f"{f['fresh_rollouts']}. A fork's first step is its parent's step again (same action "
        f"and text) {f.get('forks_repeating_parents_step', 0)} of {f['forks']} times.",
        f"- The first rollout's most uncertain step is step 0 in "
        f"{f['first_rollouts_most_uncertain_at_step_0']} of {f['questions'][MUSE]} questions by "
        "reasoning perplexity, in "
        f"{f['first_rollouts_most_uncertain_exploration_at_step_0']} by exploration perplexity "
        "(the default region, which ranks branch points); `min_branch_step=1` forks neither.",
        "",
        "Forks or fresh rollouts (`mixtures`): the first rollout, its first k forks and the "
        "independent rollouts of the same seeds for the rest of the budget of 8, the "
        "trajectories of a round forking k (`--top-k-steps 1 --samples-per-step k`); majority "
        "paired with the independent rollouts' (k 0), 95% bootstrap:",
        "",
        "| forks k | majority | any right | majority - independent majority |",
        "|---|---|---|---|",
        *(
            f"| {m['k']} | {m['majority']:.0f} | {m['any_right']:.0f} | "
            f"{m['vs_independent']['diff']:+.3f} [{m['vs_independent']['low']:+.3f}, "
            f"{m['vs_independent']['high']:+.3f}] |"
            for m in result.get("mixtures", [])
        ),
        "",
        "A learned join (`scorer.py`: logistic regression over each trajectory's "
        f"{len(FEATURES)} features; the questions in 5 folds, each joined by a scorer fitted on "
        "the other 4), against the same graph's first rollout (paired, 95% bootstrap):",
        "",
    ]
    for g, joins in result["learned"].items():
        for name, d in joins.items():
            lines.append(
                f"- {g}, {name}: {d['a']:.3f} vs {d['b']:.3f}: {d['diff']:+.3f} "
                f"[{d['low']:+.3f}, {d['high']:+.3f}]"
            )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    """Write ``joins.json`` and ``joins.md`` from ``hotpotqa/``'s rows (or those of ``argv[1]``).

    ``argv[2]``, when given, names an earlier run of the same questions whose ParallelMuse rows
    this run's are compared with (``before`` in ``joins.json``). A run of ParallelMuse alone (one
    setting tried, ``run.sh``'s ``GRAPHS``) takes its independent rollouts from that run's rows
    (``rollouts_from``).

    A rows folder named on the command line (``run.sh`` passes ``$ROWS``) gets its tables
    inside it, so the 25-question tables beside this script stay those of ``hotpotqa/``.
    """
    folder = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE / "hotpotqa"
    out = HERE if folder == HERE / "hotpotqa" else folder
    rows = results_in(folder)
    asked = len({r["id"] for r in rows})
    earlier = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None
    before = results_in(earlier) if earlier else []
    # A ParallelMuse-only run takes its independent rollouts from the earlier run's rows.
    rollouts_from = earlier if earlier and not any(r["graph"] == ROLL for r in rows) else None
    if rollouts_from:
        rows = [*rows, *(r for r in before if r["graph"] == ROLL)]
    run = folder / "run.json"
    settings = json.loads(run.read_text()) if run.exists() else {}
    command = "bash benchmarks/parallel_muse/defaults/run.sh"
    if out != HERE:
        command = f"LIMIT={asked} ROWS={folder.name} {command}"
    if rollouts_from:
        flags = " ".join(_flags(settings.get("muse", {})))
        command = f'GRAPHS={MUSE} MUSE="{flags}" BASE={rollouts_from.name} {command}'
    result = analyse(rows)
    result["fresh_cache"] = bool(settings.get("fresh_cache"))
    if settings.get("muse"):
        result["muse"] = settings["muse"]
    if result["fresh_cache"]:
        command = f"FRESH=1 {command}"
    if rollouts_from:
        result["rollouts_from"] = rollouts_from.name
    if earlier:  # an earlier run of the same questions, to compare ParallelMuse with
        result["before"] = {"folder": earlier.name, **against(rows, before)}
    (out / "joins.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "joins.md").write_text(markdown(result, command))
    print(markdown(result, command))


if __name__ == "__main__":
    main()
