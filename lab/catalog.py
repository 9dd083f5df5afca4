"""Every experiment by name: what ``langgraph-parallel bench list`` prints and ``bench run`` runs.

Declaring an experiment is importing its module here; its heavy imports (vLLM, torch, the
indexes) wait until it runs, so listing them costs nothing.
"""

from __future__ import annotations

from lab.base import Experiment
from lab.experiments import grpo, hotpotqa, models
from lab.experiments.engine import engine, engine_async
from lab.experiments.first_contact import first_contact
from lab.experiments.latency import latency, latency_served, policies
from lab.experiments.muse import later, muse, muse_agent, repeats
from lab.experiments.muse.defaults import defaults
from lab.experiments.reliability import reliability
from lab.experiments.retrieval import large_corpus, retrieval
from lab.experiments.serving import replicas, serving
from lab.experiments.sft import sft
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
        defaults.EXPERIMENT,
        repeats.EXPERIMENT,
        later.EXPERIMENT,
        engine.EXPERIMENT,
        engine_async.EXPERIMENT,
        latency.EXPERIMENT,
        latency_served.EXPERIMENT,
        policies.EXPERIMENT,
        serving.EXPERIMENT,
        replicas.EXPERIMENT,
        retrieval.EXPERIMENT,
        large_corpus.EXPERIMENT,
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
