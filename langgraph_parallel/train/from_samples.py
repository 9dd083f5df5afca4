"""Training data from the policy's own scored samples: the best right one, and preference pairs.

``train sample`` leaves every sample of a training question with its reward parts. Two recipes
train on them without a GPU:

- **Rejection-sampling fine-tuning** (``train sft --from-samples``, expert iteration): per
  question, the best right sample (:func:`best_right`): a right answer, decomposed where the
  policy is the parallel one and the question parallelizable (the behaviour the paper pays),
  then the fewest LLM calls, the highest reward, the fewest generated tokens, the lowest sample
  number. Questions without such a sample give nothing. ``--yes-no-min-right N`` keeps a
  question whose gold answer is yes or no only when at least N of its samples are right
  (:func:`keeps`): a policy that answers such a question right in 2 of 8 samples guesses, and
  its one right guess taught as an answer teaches the guess (``benchmarks/sft/rsft2/``: 59 of the
  139 comparisons kept were yes/no questions, most right in 2-5 of 8). Measured at 6 of 8
  (``benchmarks/sft/rsft3/``), it lost yes/no questions rather than protecting them.
- **Preference pairs** (``train dpo``): the same chosen sample against a wrong one of the same
  question (:func:`preference_pair`): the wrong sample with the highest reward, the one whose
  form is nearest the chosen one's, so the pair is about the judgement (which answer), not the
  format the policy already has.

Rows are refused if a question is an evaluation question or names the README question's people
(the sampling pool leaves them out; a folder made another way must not bring them back), and
if the folder sampled another policy than the one being trained.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.paths import portable_path
from langgraph_parallel.train.gold import Policy
from langgraph_parallel.train.questions import names_readme_entity
from langgraph_parallel.train.sample_shards import RUN_FILE, read_samples

__all__ = [
    "best_right",
    "keeps",
    "preference_pair",
    "sample_folders",
    "sample_rows",
    "sampled_defaults",
    "trajectory",
    "write_sample_data",
    "yes_no_question",
]

_YES_NO = ("yes", "no")


def _usable(row: Mapping[str, Any]) -> bool:
    return not row.get("error") and bool(row.get("messages"))


def _wanted(row: Mapping[str, Any], policy: Policy) -> bool:
    """Whether a right row shows the behaviour its policy is trained for."""
    return bool(row.get("decomposed")) or policy != "parallel" or row["class"] != "parallelizable"


def best_right(rows: Sequence[Mapping[str, Any]], policy: Policy) -> Mapping[str, Any] | None:
    """Return the best right sample of one question's rows (module docstring), or ``None``."""
    right = [r for r in rows if _usable(r) and r.get("correct") and _wanted(r, policy)]
    if not right:
        return None
    return min(
        right,
        key=lambda r: (
            int(r.get("llm_calls", 0)),
            -float(r["reward"]["total"]),
            int(r.get("completion_tokens", 0)),
            int(r["sample"]),
        ),
    )


def yes_no_question(row: Mapping[str, Any]) -> bool:
    """Return whether a gold answer of the row's question is yes or no."""
    golds = row["gold_answers"]
    return any(
        normalize_answer(g) in _YES_NO for g in ([golds] if isinstance(golds, str) else golds)
    )


def keeps(
    rows: Sequence[Mapping[str, Any]], policy: Policy, *, yes_no_min_right: int = 1
) -> Mapping[str, Any] | None:
    """Return the sample RFT trains on for one question's rows, or ``None`` to skip it.

    The best right sample (:func:`best_right`); for a yes/no question only when at least
    ``yes_no_min_right`` of its usable samples are right.
    """
    best = best_right(rows, policy)
    if best is None or yes_no_min_right <= 1 or not yes_no_question(rows[0]):
        return best
    right = sum(1 for r in rows if _usable(r) and r.get("correct"))
    return best if right >= yes_no_min_right else None


def preference_pair(
    rows: Sequence[Mapping[str, Any]], policy: Policy
) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """Return (chosen, rejected) of one question's rows, or ``None`` without both kinds."""
    chosen = best_right(rows, policy)
    wrong = [r for r in rows if _usable(r) and not r.get("correct")]
    if chosen is None or not wrong:
        return None
    rejected = min(wrong, key=lambda r: (-float(r["reward"]["total"]), int(r["sample"])))
    return chosen, rejected


def sample_folders(folders: Iterable[str | Path], policy: Policy) -> list[dict[str, Any]]:
    """Return each folder's ``run.json``, checking that it sampled ``policy``.

    Raises:
        UserError: A folder is not a ``train sample`` folder, or sampled the other policy.
    """
    runs = []
    for folder in map(Path, folders):
        path = folder / RUN_FILE
        if not path.is_file():
            raise UserError(
                f"--from-samples {folder}: no {RUN_FILE}; make the folder with "
                "`langgraph-parallel train sample --out FOLDER`."
            )
        run = json.loads(path.read_text(encoding="utf-8"))
        sampled = run.get("settings", {}).get("policy")
        if sampled != policy:
            raise UserError(
                f"--from-samples {folder} sampled the {sampled!r} policy; train it with "
                f"--policies {sampled}, or sample the {policy} policy "
                f"(train sample --policy {policy})."
            )
        runs.append(run)
    return runs


def sampled_defaults(
    folders: Sequence[str], policies: str | None, init: str | None
) -> tuple[str, str]:
    """Return ``--policies`` and ``--init`` of ``train sft --from-samples`` with their defaults.

    The policy is the one the folders sampled and training continues the model they sampled
    (on-policy: the samples are that model's), unless the command names others.

    Raises:
        UserError: The folders sampled different policies or models and none is named.
    """
    runs = [
        json.loads((Path(f) / RUN_FILE).read_text())
        for f in folders
        if (Path(f) / RUN_FILE).is_file()
    ]
    sampled = {str(r.get("settings", {}).get("policy")) for r in runs}
    models = {str(r.get("settings", {}).get("model")) for r in runs}
    if policies is None and len(sampled) == 1:
        policies = sampled.pop()
    if init is None and len(models) == 1:
        init = models.pop()
    if policies is None or init is None:
        raise UserError(
            "--from-samples: the folders sampled several policies or models; name the one to "
            "train with --policies and the adapter it continues with --init."
        )
    return policies, init


def sample_rows(
    folders: Iterable[str | Path], *, held_out: set[str]
) -> dict[str, list[dict[str, Any]]]:
    """Return question id -> its samples, over every folder (a repeated sample counts once).

    Raises:
        UserError: A row is a held-out question or names the README question's people.
    """
    by_question: dict[str, list[dict[str, Any]]] = {}
    seen: set[tuple[str, str, int]] = set()
    for folder in folders:
        for rows in read_samples(Path(folder)).values():
            for row in rows:
                qid = str(row["id"])
                if qid in held_out or names_readme_entity(str(row["question"])):
                    raise UserError(
                        f"--from-samples {folder} holds question {qid} "
                        f"({row['question']!r}), an evaluation question or one about the "
                        "README question's people; sample the training pool again "
                        "(train sample leaves them out)."
                    )
                key = (str(row.get("seed")), qid, int(row["sample"]))
                if key not in seen:
                    seen.add(key)
                    by_question.setdefault(qid, []).append(row)
    return by_question


def trajectory(row: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
    """Return a sample row as a ``train sft`` trajectory (:mod:`.trajectories`)."""
    return {
        "id": str(row["id"]),
        "dataset": row.get("dataset"),
        "type": row.get("type"),
        "question_class": row["class"],
        "policy": policy,
        "messages": [{"role": m["role"], "content": m["content"]} for m in row["messages"]],
        "sample": int(row["sample"]),
        "seed": row.get("seed"),
        "reward": float(row["reward"]["total"]),
        "llm_calls": int(row.get("llm_calls", 0)),
    }


def describe(folders: Sequence[str | Path], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return what a ``data.json`` says of the sample folders the data came from."""
    return {
        "sample_folders": [portable_path(f) for f in folders],
        "sampled": [
            {
                "model": run.get("settings", {}).get("model"),
                "adapters": run.get("adapters", {}),
                "temperature": run.get("settings", {}).get("temperature"),
                "commits": run.get("commits", []),
            }
            for run in runs
        ],
    }


def write_sample_data(
    out: Path,
    folders: Sequence[str | Path],
    policy: Policy,
    *,
    init: str | None,
    held_out: set[str],
    yes_no_min_right: int = 1,
    command: str = "",
) -> Path:
    """Write ``out/data.jsonl``: the best right sample of every question (and ``data.json``).

    The same folders give the same file (rows in question-id order), so ``--resume`` continues
    on the file its checkpoints learnt from.

    Args:
        out: The training run's folder.
        folders: ``train sample`` folders of ``policy``.
        policy: The policy trained.
        init: The adapter training continues (its passage budget is the data's: the samples
            were shown passages as it is served).
        held_out: Question ids never trained on.
        yes_no_min_right: Right samples a yes/no question needs to be kept (:func:`keeps`).
        command: The command line, recorded in ``data.json``.

    Raises:
        UserError: No question has a right sample, or a folder is refused (:func:`sample_rows`).
    """
    from langgraph_parallel.models.adapters import read_card
    from langgraph_parallel.train.start import start_adapter
    from langgraph_parallel.train.trajectories import write_trajectories

    runs = sample_folders(folders, policy)
    by_question = sample_rows(folders, held_out=held_out)
    chosen = {
        qid: keeps(rows, policy, yes_no_min_right=yes_no_min_right)
        for qid, rows in by_question.items()
    }
    records = [trajectory(best, policy) for qid in sorted(chosen) if (best := chosen[qid])]
    if not records:
        raise UserError(
            f"--from-samples: none of {len(by_question)} questions has a right sample to keep; "
            "sample more questions or more samples a question (train sample --limit/--samples)."
        )
    adapter = start_adapter(init) if init else None
    settings = runs[0].get("settings", {})
    classes: dict[str, list[int]] = {}
    yes_no = [0, 0]
    for qid, rows in by_question.items():
        kept = chosen[qid] is not None
        classes.setdefault(str(rows[0]["class"]), [0, 0])[0 if kept else 1] += 1
        if yes_no_question(rows[0]):
            yes_no[0 if kept else 1] += 1
    meta = {
        "command": command,
        "method": "rejection-sampling fine-tuning on the policy's own best right samples",
        **describe(folders, runs),
        "datasets": sorted(
            {str(r.get("part") or r.get("dataset")) for v in by_question.values() for r in v}
        ),
        "exclude": [],
        "selection": {
            "questions": len(by_question),
            "kept": len(records),
            "by_class": {c: {"kept": k, "without": w} for c, (k, w) in sorted(classes.items())},
            "yes_no": {"kept": yes_no[0], "without": yes_no[1]},
            "yes_no_min_right": yes_no_min_right,
        },
        "config": {
            "per_class": None,
            "corpus": None,
            "max_turns": settings.get("max_turns"),
            "top_k": settings.get("top_k"),
            "passage_sentences": read_card(adapter).get("passage_sentences") if adapter else None,
            "seed": settings.get("seed"),
        },
        "synthesis_s": 0.0,
    }
    return write_trajectories(out, records, meta)
