"""Split a policy's comparison questions by the kind of answer they want, as JSON.

``python -m lab.experiments.sft.answer_kinds NAME=FOLDER ...`` reads each ``bench`` folder's
parallelizable (comparison) rows and splits them by gold answer: ``yes/no`` questions ("Are A
and B both ...?") and ``entity`` questions ("Which of A and B ...?"). Per run and kind it prints
EM, what the run answered to the yes/no questions (yes, no, anything else), and EM where every
gold paragraph was retrieved (``all_gold``: a reader's miss, not a searcher's); then the first
run paired with each of the others per kind (95% paired bootstrap). Issue 81 reads from it where
a policy's comparisons are lost (``benchmarks/sft/rsft2/README.md``).

``python -m lab.experiments.sft.answer_kinds --samples FOLDER`` reads a ``train sample`` folder
instead: per kind, pass@1 over the K samples a question and the share a majority of the K
answers gets right, paired with pass@1 (what a vote at inference would add).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from lab.experiments.sft.candidates import named_folders
from lab.paired import paired_bootstrap, paired_by_id
from langgraph_parallel.eval.results import results_in
from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.train.from_samples import sample_rows, yes_no_question

__all__ = ["USAGE", "answer_kind", "kinds_table", "main", "samples_table"]

USAGE = (
    "usage: python -m lab.experiments.sft.answer_kinds NAME=FOLDER [NAME=FOLDER ...]\n"
    "  each FOLDER a bench output folder (results.jsonl); the first is paired with the others\n"
    "   or: python -m lab.experiments.sft.answer_kinds --samples FOLDER (a train sample folder)"
)
"""What ``--help`` and a malformed argument print."""

Kind = Literal["yes/no", "entity"]
KINDS: tuple[Kind, ...] = ("yes/no", "entity")
_YES_NO = ("yes", "no")


def _golds(row: Mapping[str, Any]) -> list[str]:
    golds = row["gold_answers"]
    return [golds] if isinstance(golds, str) else list(golds)


def answer_kind(row: Mapping[str, Any]) -> Kind:
    """Return ``yes/no`` when a gold answer of ``row`` is yes or no, else ``entity``."""
    return "yes/no" if yes_no_question(row) else "entity"


def _said(row: Mapping[str, Any]) -> str:
    answer = normalize_answer(row.get("answer") or "")
    return answer if answer in _YES_NO else "other"


def kinds_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return per kind: n, EM, the answers given to yes/no questions, EM where all gold was found.

    Args:
        rows: One run's ``bench`` rows; only the parallelizable ones are read.
    """
    out: dict[str, Any] = {}
    comparisons = [r for r in rows if r["class"] == "parallelizable"]
    for kind in KINDS:
        part = [r for r in comparisons if answer_kind(r) == kind]
        if not part:
            continue
        found = [r for r in part if float(r.get("all_gold") or 0) == 1.0]
        entry: dict[str, Any] = {
            "n": len(part),
            "em": round(statistics.fmean(float(r["em"]) for r in part), 3),
            "all_gold_found": round(len(found) / len(part), 3),
            "em_where_all_gold_found": round(statistics.fmean(float(r["em"]) for r in found), 3)
            if found
            else None,
        }
        if kind == "yes/no":
            said = Counter(_said(r) for r in part)
            gold = Counter(normalize_answer(_golds(r)[0]) for r in part)
            entry["answered"] = {k: said.get(k, 0) for k in (*_YES_NO, "other")}
            entry["gold"] = {k: gold.get(k, 0) for k in _YES_NO}
        out[kind] = entry
    return out


def _em_by_id(rows: Sequence[Mapping[str, Any]], kind: Kind) -> dict[str, float]:
    return {
        str(r["id"]): float(r["em"])
        for r in rows
        if r["class"] == "parallelizable" and answer_kind(r) == kind
    }


def samples_table(by_question: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Return per kind and over all: questions, right samples, pass@1, a majority against pass@1.

    Args:
        by_question: Question id -> its samples (``train sample`` rows: ``answer``,
            ``correct``); only comparisons (``class`` parallelizable) are read. The majority is
            the most frequent normalised answer (the first seen on a tie), right when a sample
            giving it is.
    """
    out: dict[str, Any] = {}
    comparisons = [
        rows for rows in by_question.values() if rows and rows[0]["class"] == "parallelizable"
    ]
    for kind in (*KINDS, "all"):
        questions = [rows for rows in comparisons if kind in ("all", answer_kind(rows[0]))]
        if not questions:
            continue
        pass1, majority = [], []
        for rows in questions:
            pass1.append(statistics.fmean(float(r["correct"]) for r in rows))
            answers = [normalize_answer(r.get("answer") or "") for r in rows]
            top = Counter(answers).most_common(1)[0][0]
            majority.append(
                float(any(r["correct"] for r, a in zip(rows, answers, strict=True) if a == top))
            )
        right = Counter(sum(bool(r["correct"]) for r in rows) for rows in questions)
        out[kind] = {
            "questions": len(questions),
            "samples": sum(map(len, questions)),
            # questions by how many of their samples were right: 0, 1, ... the most samples
            "right_samples": [right.get(k, 0) for k in range(max(map(len, questions)) + 1)],
            "pass@1": round(statistics.fmean(pass1), 3),
            "majority - pass@1": str(paired_bootstrap(majority, pass1)),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the per-kind tables and the first run paired with the others as JSON."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or any(arg in ("-h", "--help") for arg in args):
        print(USAGE)
        return 0 if args else 2
    if args[0] == "--samples":
        if len(args) != 2:
            print(f"error: --samples takes one folder\n{USAGE}", file=sys.stderr)
            return 2
        table = samples_table(sample_rows([args[1]], held_out=set()))
        print(json.dumps({"samples": args[1], "tables": table}, indent=1))
        return 0
    named = named_folders(args, USAGE)
    if named is None:
        return 2
    loaded = {name: results_in(Path(folder)) for name, folder in named.items()}
    first, *others = loaded
    paired = {
        f"{first} - {name}": {
            kind: str(paired_by_id(_em_by_id(loaded[first], kind), _em_by_id(loaded[name], kind)))
            for kind in KINDS
            if _em_by_id(loaded[first], kind)
        }
        for name in others
    }
    result = {"tables": {n: kinds_table(rows) for n, rows in loaded.items()}, "paired_em": paired}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
