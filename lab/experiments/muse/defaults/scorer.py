"""A learned join for ParallelMuse: a logistic scorer of trajectories, cross-validated by question.

Issue 55's last join candidate: "a learned scorer trained on our own trajectories". Each
trajectory of a row becomes one example, labelled by its own EM, with features the graph has
when it joins: the answer step's confidence, whether the answer occurs in the passages the
trajectory read, the share of trajectories that gave the same answer, whether it is the first
rollout or a fork, its step count and reasoning perplexities (from the row's ``tree``), the
answer's length and whether its words are all in the question. The questions are split into
``folds``; each fold's questions are joined by a scorer fitted on the other folds only, so no
question is scored by a model that saw its labels. Two joins read the scores: the single
best-scored trajectory, and the answer with the largest sum of scores.

The model is logistic regression with an L2 penalty, fitted with ``torch.optim.LBFGS`` (torch is
installed with the engine; scikit-learn is not a dependency, and eleven features need nothing
more).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_parallel.metrics import normalize_answer

FEATURES = (
    "confidence",
    "supported",
    "unsupported",
    "vote share",
    "first rollout",
    "fork",
    "steps",
    "max reasoning ppl",
    "mean reasoning ppl",
    "answer words",
    "answer inside the question",
)


def examples(
    row: Mapping[str, Any], trees: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, float, list[float]]]:
    """Return ``(normalised answer, em, features)`` for each answered trajectory of ``row``.

    Args:
        row: A result row with ``join_inputs`` and ``question``.
        trees: The row's trajectories as :func:`.forks.trajectories` reads them (``steps``
            with each step's reasoning perplexity, ``parent``).
    """
    inputs = [t for t in row["join_inputs"] if t["answer"]]
    answers = [normalize_answer(t["answer"]) for t in inputs]
    question = set(normalize_answer(row["question"]).split())
    out = []
    for t, answer in zip(inputs, answers, strict=True):
        tree = trees.get(t["id"], {})
        ppl = [p for _, _, p in tree.get("steps", [])] or [1.0]
        words = answer.split()
        out.append(
            (
                answer,
                float(t["em"]),
                [
                    1.0 if t["confidence"] is None else float(t["confidence"]),
                    float(t["supported"] is True),
                    float(t["supported"] is False),
                    answers.count(answer) / len(answers),
                    float(t["id"] == "t0"),
                    float(t.get("parent") is not None),
                    float(len(tree.get("steps", []))),
                    max(ppl),
                    sum(ppl) / len(ppl),
                    float(len(words)),
                    float(bool(words) and set(words) <= question),
                ],
            )
        )
    return out


def _fit(xs: list[list[float]], ys: list[float], l2: float) -> Any:
    import torch

    x = torch.tensor(xs, dtype=torch.float64)
    y = torch.tensor(ys, dtype=torch.float64)
    mean, std = x.mean(0), x.std(0).clamp_min(1e-6)
    x = (x - mean) / std
    w = torch.zeros(x.shape[1] + 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200, line_search_fn="strong_wolfe")

    def loss() -> Any:
        opt.zero_grad()
        logits = x @ w[:-1] + w[-1]
        value = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
        value = value + l2 * (w[:-1] ** 2).sum()
        value.backward()
        return value

    opt.step(loss)
    weights = w.detach()

    def score(features: list[float]) -> float:
        z = (torch.tensor(features, dtype=torch.float64) - mean) / std
        return float(torch.sigmoid(z @ weights[:-1] + weights[-1]))

    return score


def cross_validated(
    per_question: Mapping[str, Sequence[tuple[str, float, list[float]]]],
    *,
    folds: int = 5,
    seed: int = 0,
    l2: float = 0.01,
) -> dict[str, dict[str, float]]:
    """Join every question with a scorer fitted on the other folds' questions.

    Returns:
        ``{"best trajectory": {id: em}, "score-weighted vote": {id: em}}``.
    """
    ids = sorted(per_question)
    random.Random(seed).shuffle(ids)
    out: dict[str, dict[str, float]] = {"best trajectory": {}, "score-weighted vote": {}}
    for k in range(folds):
        held = set(ids[k::folds])
        train = [e for q in ids if q not in held for e in per_question[q]]
        labels = [em for _, em, _ in train]
        if not held or len(set(labels)) < 2:
            continue
        score = _fit([f for _, _, f in train], labels, l2)
        for q in held:
            scored = [(score(f), answer, em) for answer, em, f in per_question[q]]
            if not scored:
                out["best trajectory"][q] = out["score-weighted vote"][q] = 0.0
                continue
            out["best trajectory"][q] = max(scored)[2]
            votes: dict[str, float] = {}
            for s, answer, _ in scored:
                votes[answer] = votes.get(answer, 0.0) + s
            best = max(votes, key=lambda a: votes[a])
            out["score-weighted vote"][q] = next(em for _, a, em in scored if a == best)
    return out
