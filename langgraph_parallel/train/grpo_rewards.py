"""The reward functions TRL's ``GRPOTrainer`` calls, and the rollout metrics they log.

One TRL reward function per component of :mod:`langgraph_parallel.rewards` (TRL sums them with
weight 1). Each reads the rollout fields :class:`~langgraph_parallel.train.rollout.GraphRollout`
returns (``steps``, and ``gold`` when gold trajectories were mixed in) and the dataset's
``answers`` and ``question_class``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph_parallel.rewards import COMPONENTS, RewardConfig, score_steps
from langgraph_parallel.train.think_stats import think_metrics

__all__ = ["reward_functions", "rollout_metrics"]


def reward_functions(config: RewardConfig) -> list[Callable[..., list[float]]]:
    """One TRL reward function per component; ``outcome`` also logs what the rollouts did.

    What they did: :func:`rollout_metrics`, with the rollouts' ``observations`` the ``<think>``
    statistics of :func:`~langgraph_parallel.train.think_stats.think_metrics`, and with their
    ``timing`` where the step's rollout seconds went (``time/rollout_s``, ``time/generate_s``,
    decoding batches and decode steps).
    """

    def make(component: str) -> Callable[..., list[float]]:
        def reward(
            completions: list[Any],
            steps: list[list[str]],
            answers: list[list[str]],
            question_class: list[str],
            log_metric: Callable[[str, float], None] | None = None,
            gold: list[bool] | None = None,
            observations: list[str] | None = None,
            timing: list[dict[str, float]] | None = None,
            **_: Any,
        ) -> list[float]:
            scored = [
                score_steps(s, a, c, config)
                for s, a, c in zip(steps, answers, question_class, strict=True)
            ]
            if component == "outcome" and log_metric is not None:
                for name, value in rollout_metrics(scored, question_class, gold).items():
                    log_metric(name, value)
                if observations is not None:
                    own = [i for i, g in enumerate(gold or [False] * len(steps)) if not g]
                    thinks = think_metrics([steps[i] for i in own], [observations[i] for i in own])
                    for name, value in thinks.items():
                        log_metric(name, value)
                for name, value in (timing[0] if timing else {}).items():
                    log_metric(f"time/{name}", value)
            return [float(getattr(r, component)) for r in scored]

        reward.__name__ = component
        return reward

    return [make(c) for c in COMPONENTS]


def rollout_metrics(
    scored: list[Any], classes: list[str], gold: list[bool] | None = None
) -> dict[str, float]:
    """EM, valid-format rate, search rounds, decomposition rate by class, of the policy's own.

    Mixed-in gold trajectories (``gold``) are left out and counted in ``rollout/gold_mixed``.
    """
    gold = gold or [False] * len(scored)
    mixed = sum(gold)
    scored = [r for r, g in zip(scored, gold, strict=True) if not g]
    classes = [c for c, g in zip(classes, gold, strict=True) if not g]
    n = len(scored) or 1
    out = {
        "rollout/gold_mixed": float(mixed),
        "rollout/em": sum(r.correct for r in scored) / n,
        "rollout/valid_format": sum(r.valid_format for r in scored) / n,
        "rollout/search_rounds": sum(r.searches for r in scored) / n,
    }
    for qclass in ("parallelizable", "sequential"):
        rows = [r for r, c in zip(scored, classes, strict=True) if c == qclass]
        if rows:
            rate = sum(bool(r.decomposed) for r in rows) / len(rows)
            out[f"rollout/decomposition_rate/{qclass}"] = rate
    return out
