"""First contact and the passage budget: two measurements of ``eval``, declared as experiments.

What a new user meets on this machine (:mod:`lab.experiments.first_contact.measure`) and what
each passage budget keeps (:mod:`lab.experiments.first_contact.passage_budget`). Both measure from
``eval`` modules of their own (``python -m`` runs them as well); these declarations give them a
name for ``bench run``, and the first one its docs block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import GRAPHS, SERVING
from lab.paths import checkout_dir
from lab.provenance import at_commit, part_commit, shown_command
from langgraph_parallel.errors import UserError

__all__ = ["FIRST_CONTACT", "PASSAGE_BUDGET", "render_first_contact"]


def _first_contact(run: Run) -> None:
    from lab.experiments.first_contact.measure import main

    run.uses("smollm2-parallel")
    argv = ["--out", str(run.out), "--repeats", str(run.settings["repeats"])]
    argv += ["--questions", str(run.limit)] if run.limit is not None else []
    if main(argv):
        raise UserError("first-contact failed; its error is above.")


def _passage_budget(run: Run) -> None:
    from lab.experiments.first_contact.passage_budget import main

    run.uses("smollm2")
    if main(["--out", str(run.out), "--top-k", str(run.settings["top_k"])]):
        raise UserError("passage-budget failed; its error is above.")


FIRST_CONTACT = Experiment(
    name="first-contact",
    about="a new user's cold `ask` phase by phase, and each dtype's speed on this CPU",
    out="benchmarks/first_contact",
    run=_first_contact,
    limit=10,
    limit_means="warm questions per dtype",
    settings={"repeats": 3},
    measures=(*GRAPHS, *SERVING, "lab/experiments/first_contact/measure.py"),
)
PASSAGE_BUDGET = Experiment(
    name="passage-budget",
    about="gold sentences and tokens kept by each passage budget, bundled sample and index",
    out="benchmarks/retrieval/passage_budget",
    run=_passage_budget,
    limit_means="unused: the whole bundled sample",
    settings={"top_k": 3},
)


def render_first_contact(path: Path | None = None) -> str:
    """Render cold ``ask`` by phase and each dtype's speed (block ``first-contact-results``)."""
    path = path or checkout_dir() / "benchmarks" / "first_contact" / "first_contact.json"
    result: dict[str, Any] = json.loads(path.read_text())
    cpu = result["machine"]
    cold = result["cold_start"]
    first, median = cold["first_ever"], cold["median_run"]
    walls = ", ".join(f"{c['process_wall_s']:.1f}" for c in cold["cold"])
    served = cold.get("daemon")
    columns = [first, median]
    header = "| phase (s) | one-shot, first ever | one-shot, cold (median run) |"
    about = (
        "The README question in a new process (`ask --json --timings`), timed from outside. "
        "One-shot (`--no-daemon`): first on an empty cache, then "
        f"{len(cold['cold'])} times on that cache ({walls} s)."
    )
    if served:
        later = ", ".join(f"{c['process_wall_s']:.1f}" for c in served["later"])
        columns += [served["first"], served["median_run"]]
        header += " background server, first ask | background server, later (median run) |"
        about += (
            " As `ask` runs by default, on that cache: the first ask starts the background "
            f"server, the next {len(served['later'])} reuse it ({later} s)."
        )
    lines = [
        f"Made by {shown_command(result['command'])}"
        f"{at_commit(result)} (one-shot and background server"
        f"{part_commit(result, 'cold_start')}, dtypes{part_commit(result, 'dtype')}), "
        f"{cpu['cpu']}, {cpu['cores']} cores "
        f"(avx512_bf16: {'yes' if cpu['avx512_bf16'] else 'no'}, amx: "
        f"{'yes' if cpu['amx'] else 'no'}), `smollm2-parallel`. {about}",
        "",
        header,
        "|---" * (len(columns) + 1) + "|",
    ]
    phases = list(dict.fromkeys(p for column in columns for p in column["timings"]))
    for phase in phases:
        cells = " | ".join(f"{c['timings'].get(phase, 0):.2f}" for c in columns)
        lines.append(f"| {phase} | {cells} |")
    walls_row = [f"**{first['process_wall_s']:.1f}**"]
    walls_row.append(f"**{median['process_wall_s']:.1f}** (median {cold['cold_median_s']:.1f})")
    if served:
        walls_row.append(f"**{served['first']['process_wall_s']:.1f}**")
        walls_row.append(
            f"**{served['median_run']['process_wall_s']:.1f}** (median "
            f"{served['later_median_s']:.1f})"
        )
    lines.append(f"| **process wall** | {' | '.join(walls_row)} |")
    dtype = result["dtype"]
    lines += [
        "",
        "| dtype | prefill 1 / 4 prompts tok/s | decode 1 / 4 streams tok/s | warm question s |",
        "|---|---|---|---|",
    ]
    for name, d in dtype["by_dtype"].items():
        mark = " (default here)" if name == dtype["default"] else ""
        lines.append(
            f"| {name}{mark} | {d['prefill_1_tok_s']:.0f} / {d['prefill_4_tok_s']:.0f} | "
            f"{d['decode_1_tok_s']:.0f} / {d['decode_4_tok_s']:.0f} | "
            f"**{d['warm_question_median_s']:.2f}** ({d['warm_questions']} questions) |"
        )
    lines.append("")
    lines.append(
        f"The default ({dtype['default']}) takes {dtype['default_vs_faster']:.2f}x the faster "
        f"dtype's ({dtype['faster']}) warm question on this CPU."
    )
    return "\n".join(lines)
