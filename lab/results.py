"""The result blocks of the docs and README, generated from the committed benchmark files.

``langgraph-parallel results`` rewrites the blocks where they are; ``--check`` exits 1 if a
block is stale or missing (``python -m lab.results`` does the
same), and both exit 1 on orphan benchmark data or a figure typed into README.md's prose
(:mod:`~.results_checks`); ``--draw`` instead draws the plots and trees, which are not committed
(:mod:`~.drawings`). Each block sits between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` in one of the pages (README.md, ``benchmarks/README.md`` or a page under
``docs/``: most in ``docs/results.md``, ``summary-results`` in README.md, the index of every
experiment in ``benchmarks/README.md`` and atop ``docs/results.md``, :mod:`~.results_index`) and
is rendered only from its benchmark file by its experiment's renderer, so a figure in the docs
is always the file's figure; ``tests/unit/test_readme_results.py`` fails when a block and its
file disagree. Every block must be in exactly one page; a block may move between pages without
a change here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from lab.catalog import EXPERIMENTS
from lab.drawings import print_drawn
from lab.experiments.engine.engine import render_engine
from lab.experiments.first_contact.first_contact import render_first_contact
from lab.experiments.hotpotqa import render_hotpotqa200
from lab.experiments.latency.latency_served import render_latency
from lab.experiments.latency.policies_analysis import render_policies
from lab.experiments.models import render_models
from lab.experiments.muse.muse_defaults import render_muse_defaults
from lab.experiments.muse.muse_tables import render_parallel_muse
from lab.experiments.reliability.reliability_table import render_reliability
from lab.experiments.retrieval.retrieval import render_retrieval
from lab.experiments.serving.serving import render_serving
from lab.experiments.sft.sft_tables import render_sft
from lab.paths import checkout_dir
from lab.results_checks import problems
from lab.results_index import (
    render_benchmarks_index,
    render_results_index,
)
from lab.rl_blocks import render_rl, render_rl_sft
from lab.staleness import full_history
from lab.summary_block import render_summary

__all__ = ["BLOCKS", "block", "cmd_results", "homes", "main", "pages", "rewrite_all"]

HISTORY_BLOCKS = ("results-index", "benchmarks-index", "summary-results")
"""The blocks rendered from git history (:mod:`~.staleness`, :mod:`~.code_age`), besides the
committed files: without the history they are neither checked nor rewritten."""

BLOCKS: dict[str, Callable[[], str]] = {
    "results-index": render_results_index,
    "benchmarks-index": render_benchmarks_index,
    "hotpotqa200-results": render_hotpotqa200,
    "engine-results": render_engine,
    "models-results": render_models,
    "rl-results": render_rl,
    "rl-sft-results": render_rl_sft,
    "reliability-results": render_reliability,
    "sft-results": render_sft,
    "muse-results": render_parallel_muse,
    "muse-defaults-results": render_muse_defaults,
    "retrieval-results": render_retrieval,
    "latency-results": render_latency,
    "latency-policies-results": render_policies,
    "first-contact-results": render_first_contact,
    "serving-results": render_serving,
    "summary-results": render_summary,
}
"""Block name -> renderer (each reads its committed files in this checkout)."""


def pages(root: Path | None = None) -> list[Path]:
    """Return the files that may hold blocks: the two READMEs and every page under ``docs/``."""
    root = root or checkout_dir()
    readmes = [root / "README.md", root / "benchmarks" / "README.md"]
    return [p for p in readmes if p.is_file()] + sorted((root / "docs").rglob("*.md"))


def block(text: str, name: str) -> str | None:
    """Return the current content of block ``name`` in ``text`` (``None`` if it has none)."""
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    return match.group(1).removesuffix("\n") if match else None


def _replace(text: str, name: str, body: str) -> str:
    return re.sub(
        rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
        lambda m: m.group(1) + body + "\n" + m.group(2),
        text,
        flags=re.S,
    )


def homes(files: list[Path]) -> dict[str, Path]:
    """Return block name -> the one file that holds it.

    Raises:
        SystemExit: Naming a block missing from every page or held by two.
    """
    found: dict[str, list[Path]] = {name: [] for name in BLOCKS}
    for path in files:
        text = path.read_text()
        for name in BLOCKS:
            if block(text, name) is not None:
                found[name].append(path)
    for name, paths in found.items():
        if len(paths) != 1:
            where = ", ".join(str(p) for p in paths) or "no page"
            raise SystemExit(f"block <!-- {name}:start --> must be in one page, found in {where}")
    return {name: paths[0] for name, paths in found.items()}


def rewrite_all(files: list[Path]) -> dict[Path, tuple[str, str]]:
    """Return each file holding blocks -> (its text, its text with every block re-rendered)."""
    texts: dict[Path, tuple[str, str]] = {}
    for name, path in homes(files).items():
        current, new = texts.get(path, (path.read_text(),) * 2)
        texts[path] = (current, _replace(new, name, BLOCKS[name]()))
    return texts


def _keep_blocks(current: str, new: str, names: Sequence[str]) -> str:
    """Return ``new`` with the blocks ``names`` as they are in ``current``."""
    for name in names:
        old_body, new_body = block(current, name), block(new, name)
        if old_body is not None and new_body is not None:
            new = _replace(new, name, old_body)
    return new


def cmd_results(args: argparse.Namespace) -> int:
    """Rewrite the stale blocks (or, with ``--check``, only name them), then run the checks.

    With ``--draw``, only draw the plots and trees of ``benchmarks/`` (:mod:`~.drawings`).

    Returns:
        1 if ``--check`` found a stale block, or if there is orphan data or a stray README
        figure (which rewriting cannot fix); else 0.
    """
    root = checkout_dir()
    if getattr(args, "draw", False):
        return print_drawn(root)
    stale = []
    texts = rewrite_all(pages(root))
    if not full_history(root):
        # The index's stale labels need the commits the runs were made at: keep it as it is.
        print(
            f"{', '.join(HISTORY_BLOCKS)}: not checked (no full git history here)", file=sys.stderr
        )
        texts = {
            path: (cur, _keep_blocks(cur, new, HISTORY_BLOCKS))
            for path, (cur, new) in texts.items()
        }
    for path, (current, new) in texts.items():
        if new == current:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(new)
    for path in stale:
        verb = "stale" if args.check else "rewritten"
        print(f"{path.relative_to(root)}: result blocks {verb}", file=sys.stderr)
    rendered = {
        name: body
        for _, new in texts.values()
        for name in BLOCKS
        if (body := block(new, name)) is not None
    }
    found = problems(root, EXPERIMENTS, rendered)
    for message in found:
        print(message, file=sys.stderr)
    return 1 if (args.check and stale) or found else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m lab.results``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = parser.add_mutually_exclusive_group()  # as ``langgraph-parallel results`` (.cli)
    what.add_argument(
        "--check", action="store_true", help="exit 1 if a block is stale (no rewriting)"
    )
    what.add_argument("--draw", action="store_true", help="draw benchmarks/' plots and trees")
    return cmd_results(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
