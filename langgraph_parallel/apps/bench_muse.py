"""``bench`` options for ParallelMuse runs: graph settings, a fresh prefix cache, context corpora.

The ParallelMuse benchmark (long trajectories, partial vs independent rollouts) runs through the
one harness, ``bench``; these options are what it needs beyond the other graphs:

- ``--budget``, ``--region``, ... (the ``MuseContext`` fields a sweep varies), passed to
  ``parallel-muse``, ``rollouts-majority`` and ``parallel-muse-agent`` only;
- ``--fresh-cache``: empty the engine's prefix cache before each graph, so a system's cached
  prompt tokens come from its own calls, never from another system's run of the same questions;
- ``--corpus contexts``: search a file's questions among its rows' own paragraphs (2Wiki and
  MuSiQue ship no shared corpus; :func:`~langgraph_parallel.eval.contexts.context_corpus_of`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_muse.context import JOINS, REPORT_MODES, REPORT_STYLES
from langgraph_parallel.parallel_muse.uncertainty import MODES, REGIONS

__all__ = [
    "MUSE_GRAPHS",
    "MUSE_OPTIONS",
    "add_muse_arguments",
    "fresh_cache_hook",
]

MUSE_GRAPHS = ("parallel-muse", "rollouts-majority", "parallel-muse-agent")
MUSE_OPTIONS: dict[str, dict[str, Any]] = {
    "budget": {"type": int, "help": "trajectories per question"},
    "initial_rollouts": {"type": int, "help": "full rollouts before branching"},
    "top_k_steps": {"type": int, "help": "branch points per round"},
    "samples_per_step": {"type": int, "help": "branches per branch point"},
    "rounds": {"type": int, "help": "branching rounds"},
    "min_branch_step": {
        "type": int,
        "help": "earliest step a branch may start at (default 1; 0: the paper's any step)",
    },
    "branch_temperature": {
        "type": float,
        "help": "sampling temperature of a fork's run (default: the first rollout's, 0.6)",
    },
    "region": {"choices": REGIONS, "help": "region whose uncertainty picks branch points"},
    "mode": {"choices": MODES, "help": "uncertainty score: mean token entropy or perplexity"},
    "join": {"choices": JOINS, "help": "how the answer is picked"},
    "reports": {"choices": REPORT_MODES, "help": "which trajectories get a report"},
    "report_style": {
        "choices": REPORT_STYLES,
        "help": "report by a call on a new prompt, one continuing the trajectory, or no call; "
        "auto: no call for raw-prompt models",
    },
    "report_max_tokens": {"type": int, "help": "token limit of one report and of the analyst"},
}
"""MuseContext fields ``bench`` sets on the ParallelMuse graphs (default: the graph's own)."""


def add_muse_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--fresh-cache`` and the ParallelMuse settings to ``bench``'s parser."""
    parser.add_argument(
        "--fresh-cache",
        action="store_true",
        help="empty the engine's prefix cache before each graph, so no graph's cached prompt "
        "tokens come from another's run (in-process engine only)",
    )
    group = parser.add_argument_group(
        "ParallelMuse graphs", f"settings of {', '.join(MUSE_GRAPHS)} (default: the graph's)"
    )
    for key, spec in MUSE_OPTIONS.items():
        group.add_argument("--" + key.replace("_", "-"), default=None, **spec)


def fresh_cache_hook(models: Mapping[str, Any]) -> Callable[[str], None]:
    """Return a ``before_graph`` hook emptying the prefix cache of the graph's engine.

    Args:
        models: Graph name -> its chat model.

    Raises:
        UserError: A graph's model has no in-process engine to empty.
    """
    other = [name for name, model in models.items() if not policy_of(model).in_process_engine]
    if other:
        raise UserError(
            f"--fresh-cache needs the in-process engine (an embedded model or a model folder); "
            f"{', '.join(other)} run on another model."
        )
    return lambda name: models[name].reset_prefix_cache()
