"""The pairs SFT levers' recipes: one more epoch on corpus pair questions + HotpotQA replay.

``python -m lab.experiments.sft.lever_pairs RECIPE`` runs one from the checkout, each step a
``langgraph-parallel`` command in its own process, skipping the data steps whose file is there
already (a stopped recipe resumes), and logs its start (time, CPU, commit) and its total wall
time into the run's log, as the committed ``wall*.log`` of ``benchmarks/sft/lever-pairs/`` show:

- ``pairs``: the shipped parallel adapter, one more epoch on 200 pair questions a kind
  (``data/hotpotqa_corpus_pairs.jsonl.gz``) + a replay of 80 HotpotQA questions a class, into
  ``runs/pairs-sft`` (``benchmarks/sft/lever-pairs/``);
- ``pairs-sequential``: its sequential twin, the shipped sequential adapter on the same
  trajectory file;
- ``both``: the second lever, the three pair kinds ("both KIND" added), 240 pairs + 60 replayed,
  into ``runs/pairs-sft2`` (``benchmarks/sft/lever-pairs/both/``);
- ``both-eval``: its candidate measured as the first lever was (``parallel-search`` on the sft
  experiment's two samples), rows into ``benchmarks/sft/lever-pairs/both/``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.paths import checkout_dir
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.paths import source_commit

__all__ = ["RECIPES", "Recipe", "Step", "cli_step", "main", "pairs_recipe", "run_recipe"]

CLI_MODULE = "langgraph_parallel.apps.cli"
SHARED_DATA = "../shared/data"


@dataclass(frozen=True)
class Step:
    """One ``langgraph-parallel`` command of a recipe.

    Attributes:
        args: Its arguments.
        makes: A file (from the checkout) whose presence means the step is done, else ``""``.
    """

    args: tuple[str, ...]
    makes: str = ""


@dataclass(frozen=True)
class Recipe:
    """A recipe: its log (from the checkout) and its steps, in order."""

    log: str
    steps: tuple[Step, ...]


def _train(out: str, policy: str) -> Step:
    return Step(
        (
            *("train", "sft", "--init", f"smollm2-{policy}", "--policies", policy),
            *("--data", f"{out}/mix/data.jsonl", "--epochs", "1", "--learning-rate", "2e-4"),
            *("--save-steps", "5", "--resume", "--out", f"{out}/train"),
        )
    )


def pairs_recipe(out: str, pairs: int, replay: int) -> Recipe:
    """Return a lever's training recipe: ``pairs`` pair questions and ``replay`` HotpotQA ones.

    Both are synthesized as the parallel policy's trajectories, combined into ``OUT/mix``, and
    the shipped parallel adapter trains one more epoch on them into ``OUT/train``.
    """
    sources = {
        f"p{pairs}": ("data/hotpotqa_corpus_pairs.jsonl.gz", pairs),
        f"h{replay}": (f"{SHARED_DATA}/hotpotqa_dev_distractor_subset.jsonl.gz", replay),
    }
    steps = [
        Step(
            ("train", "sft", "--dataset", dataset, "--per-class", str(n), "--synthesize-only")
            + ("--out", f"{out}/{name}", "--policies", "parallel"),
            makes=f"{out}/{name}/data.jsonl",
        )
        for name, (dataset, n) in sources.items()
    ]
    data = [arg for name in sources for arg in ("--data", f"{out}/{name}/data.jsonl")]
    steps.append(
        Step(("train", "chains", "combine", *data, "--out", f"{out}/mix"), f"{out}/mix/data.jsonl")
    )
    return Recipe(f"{out}/wall.log", (*steps, _train(out, "parallel")))


def _eval(model: str) -> Recipe:
    rows = "benchmarks/sft/lever-pairs/both"
    common = ("--seed", "0", "--graphs", "parallel-search", "--model", model, "--concurrency", "6")
    hotpotqa = ("bench", "--dataset", "data/hotpotqa_dev_sample300.jsonl.gz", "--limit", "300")
    wiki = (
        *("bench", "--dataset", f"{SHARED_DATA}/2wikimultihopqa_dev_sample500.jsonl.gz"),
        *("--limit", "100", "--corpus"),
        "benchmarks/sft/lever-pairs/2wiki/contexts-f071f5aadcc7.jsonl.gz",
    )
    return Recipe(
        "runs/pairs-sft2/eval.log",
        (
            Step((*hotpotqa, *common, "--out", f"{rows}/hotpotqa/parallel-search")),
            Step((*wiki, *common, "--out", f"{rows}/2wiki/parallel-search")),
        ),
    )


RECIPES: dict[str, Recipe] = {
    "pairs": pairs_recipe("runs/pairs-sft", 200, 80),
    "pairs-sequential": Recipe(
        "runs/pairs-sft/wall-seq.log", (_train("runs/pairs-sft", "sequential"),)
    ),
    "both": pairs_recipe("runs/pairs-sft2", 240, 60),
    "both-eval": _eval("runs/pairs-sft2/train/parallel"),
}
"""Recipe name -> the recipe (see the module docstring)."""


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def cli_step(args: Sequence[str], root: Path) -> int:
    """Run ``langgraph-parallel ARGS`` in a process of its own in ``root``; return its status."""
    return subprocess.run([sys.executable, "-m", CLI_MODULE, *args], cwd=root).returncode


def run_recipe(
    recipe: Recipe,
    root: Path | None = None,
    *,
    call: Callable[[Sequence[str], Path], int] = cli_step,
) -> int:
    """Run ``recipe``'s steps in ``root`` (the checkout), stopping at the first that fails.

    Args:
        recipe: What to run.
        root: The checkout (default: the lab's).
        call: Runs one step's arguments in ``root`` and returns its exit status.

    Returns:
        The exit status of the last step run (0: all done).
    """
    root = root or checkout_dir()
    log = root / recipe.log
    log.parent.mkdir(parents=True, exist_ok=True)
    commit = source_commit(root)[:7]
    log.write_text(f"start {_stamp()} Model name: {machine()['cpu']} commit {commit}\n")
    start = time.monotonic()
    code = 0
    for step in recipe.steps:
        if step.makes and (root / step.makes).exists():
            continue
        code = call(step.args, root)
        if code:
            break
    with log.open("a") as f:
        f.write(f"rc {code} total {round(time.monotonic() - start)} s {_stamp()}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the recipe named by the one argument (:data:`RECIPES`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in RECIPES:
        print(f"usage: python -m lab.experiments.sft.lever_pairs {{{','.join(RECIPES)}}}")
        return 2
    return run_recipe(RECIPES[args[0]])


if __name__ == "__main__":
    raise SystemExit(main())
