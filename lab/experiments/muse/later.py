"""Pair the ``min_branch_step=1`` partial rollouts with ``../gpu-policy``'s runs of the questions.

Run: ``.venv/bin/python benchmarks/parallel_muse/gpu-policy-later/analyse.py`` (writes
``later.json`` and ``later.md`` here). This folder holds partial rollouts only (``run.sh``); the
independent rollouts they are measured against are ``../gpu-policy``'s, run by the same code,
engine settings and seeds on the same questions. The experiment's own ``analyse`` does the
pairing; "step 0 allowed" is ``../gpu-policy``'s partial rollouts (the graph's default rule).
"""

import json
import sys
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from lab.experiments.muse.muse_analysis import (  # noqa: E402
    INDEPENDENT,
    PARTIAL,
    analyse,
)
from lab.paired import PairedDifference, paired_by_id  # noqa: E402
from langgraph_parallel.eval.results import results_in  # noqa: E402

SAMPLES = ("musique", "2wiki", "hotpotqa")
JOINS = ("em_join_graph", "em_join_majority", "em_join_weighted", "em_single", "em_any")


def rows(folder: Path, graph: str, sample: str) -> list[dict]:
    """One graph's rows of a sample folder, tagged with the sample."""
    return [{**r, "dataset": sample} for r in results_in(folder / sample) if r["graph"] == graph]


def main() -> None:
    """Write ``later.json`` and ``later.md``: per sample and over all questions."""
    later = {s: rows(HERE, PARTIAL, s) for s in SAMPLES}
    base = HERE.parent / "gpu-policy"
    independent = {s: rows(base, INDEPENDENT, s) for s in SAMPLES}
    step0 = {s: rows(base, PARTIAL, s) for s in SAMPLES}
    result: dict = {"samples": {}}
    for name in (*SAMPLES, "all"):
        names = SAMPLES if name == "all" else (name,)
        mine = [r for s in names for r in later[s]]
        theirs = [r for s in names for r in independent[s]]
        before = [r for s in names for r in step0[s]]
        part = analyse(mine + theirs)
        cost = {r["id"]: r["agent_cost"] for r in before}
        ids = [r["id"] for r in mine if r["id"] in cost]
        part["later_over_step0_agent_cost"] = sum(
            r["agent_cost"] for r in mine if r["id"] in cost
        ) / sum(cost[i] for i in ids)
        part["later_vs_step0"] = {
            key: asdict(
                paired_by_id(
                    {r["id"]: float(r[key]) for r in mine if r.get(key) is not None},
                    {r["id"]: float(r[key]) for r in before if r.get(key) is not None},
                )
            )
            for key in JOINS
        }
        result["samples"][name] = part
    (HERE / "later.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# ParallelMuse, min_branch_step=1, on ../gpu-policy's 150 questions", "",
             "Made by `analyse.py` here from the rows of `run.sh`'s runs and `../gpu-policy`.",
             ""]  # fmt: skip
    for name, part in result["samples"].items():
        p, i = part["graphs"][PARTIAL], part["graphs"][INDEPENDENT]
        ratio = part["partial_over_independent"]
        lines += [
            f"## {name} (n={p['n']})", "",
            f"- agent cost vs independent rollouts {ratio['agent_cost']:.3f}x, exploration tokens "
            f"{ratio['exploration_tokens']:.3f}x; vs partial rollouts forking at step 0 too "
            f"{part['later_over_step0_agent_cost']:.3f}x",
            "- EM select / majority / weighted / first rollout / any right: "
            + " / ".join(f"{p[k]:.3f}" for k in JOINS)
            + f"; independent majority {i['em_join_majority']:.3f}, any {i['em_any']:.3f}",
        ]  # fmt: skip
        for key, d in part["paired"].items():
            diff = PairedDifference(**d)
            lines.append(f"- {key}: {diff}")
        for key, d in part["later_vs_step0"].items():
            lines.append(f"- {key}, min_branch_step 1 - 0: {PairedDifference(**d)}")
        lines.append("")
    (HERE / "later.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
