"""Every experiment by name: what ``langgraph-parallel bench list`` prints and ``bench run`` runs.

Declaring an experiment is importing its module here; its heavy imports (vLLM, torch, the
indexes) wait until it runs, so listing them costs nothing.
"""

from __future__ import annotations

from langgraph_parallel.apps.experiments import (
    engine,
    engine_async,
    first_contact,
    grpo,
    hotpotqa,
    latency,
    latency_served,
    models,
    muse,
    muse_agent,
    reliability,
    retrieval,
    serving,
    sft,
)
from langgraph_parallel.apps.experiments.base import Experiment
from langgraph_parallel.errors import UserError

__all__ = ["EXPERIMENTS", "experiment"]

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        hotpotqa.EXPERIMENT,
        models.EXPERIMENT,
        sft.EXPERIMENT,
        grpo.EXPERIMENT,
        muse.EXPERIMENT,
        muse.SWEEP_EXPERIMENT,
        muse_agent.EXPERIMENT,
        engine.EXPERIMENT,
        engine_async.EXPERIMENT,
        latency.EXPERIMENT,
        latency_served.EXPERIMENT,
        serving.EXPERIMENT,
        retrieval.EXPERIMENT,
        reliability.EXPERIMENT,
        first_contact.FIRST_CONTACT,
        first_contact.PASSAGE_BUDGET,
    )
}
"""Name -> experiment, in the order ``bench list`` shows them."""


def experiment(name: str) -> Experiment:
    """Return the experiment called ``name``.

    Raises:
        UserError: No experiment has that name (the message lists them).
    """
    try:
        return EXPERIMENTS[name]
    except KeyError:
        known = ", ".join(EXPERIMENTS)
        raise UserError(f"No experiment {name!r}; `bench list` shows them: {known}.") from None
