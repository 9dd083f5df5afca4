"""The one table of graph names: its entries' flags, and ``bench``'s ParallelMuse flags."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass
from typing import Literal

from langgraph_parallel.apps import registry
from langgraph_parallel.apps.bench_muse import MUSE_OPTIONS, add_muse_arguments, muse_options
from langgraph_parallel.eval import muse_names
from langgraph_parallel.parallel_muse.context import JOINS, REPORT_MODES, MuseContext


def test_every_graph_name_has_one_entry_and_its_default_model() -> None:
    assert tuple(registry.GRAPHS) == registry.GRAPH_NAMES
    assert {n: e.default_model for n, e in registry.GRAPHS.items()} == registry.DEFAULT_MODELS
    assert registry.default_model("sequential") == "smollm2-sequential"


def test_the_parallel_muse_graphs_are_the_entries_flagged_so() -> None:
    assert registry.MUSE_GRAPHS == ("parallel-muse", "rollouts-majority", "parallel-muse-agent")
    flagged = [n for n, e in registry.GRAPHS.items() if e.independent]
    assert flagged == [registry.INDEPENDENT] == [muse_names.INDEPENDENT]
    assert registry.PARTIAL == muse_names.PARTIAL
    assert {registry.PARTIAL, registry.INDEPENDENT, registry.MUSE_AGENT} <= set(
        registry.GRAPH_NAMES
    )
    assert not registry.GRAPHS["parallel-search"].muse


def test_bench_muse_flags_are_muse_contexts_own_numeric_and_choice_fields() -> None:
    hints = typing.get_type_hints(MuseContext)
    fields = {f.name: f for f in dataclasses.fields(MuseContext)}
    assert set(MUSE_OPTIONS) == {
        "budget",
        "initial_rollouts",
        "top_k_steps",
        "samples_per_step",
        "rounds",
        "min_branch_step",
        "branch_temperature",
        "branch_candidates",
        "region",
        "mode",
        "join",
        "reports",
        "report_style",
        "report_max_tokens",
    }
    assert MUSE_OPTIONS["budget"]["type"] is int
    assert MUSE_OPTIONS["branch_temperature"]["type"] is float  # ``float | None``
    assert MUSE_OPTIONS["join"]["choices"] == JOINS
    assert MUSE_OPTIONS["reports"]["choices"] == REPORT_MODES
    for name, option in MUSE_OPTIONS.items():
        assert name in hints
        assert option["help"].endswith(f"(default {fields[name].default})")
        assert len(option["help"]) > len(f"{name} (default {fields[name].default})")
    assert MUSE_OPTIONS["budget"]["help"].startswith("most trajectories per question")


def test_the_flags_parse_as_the_fields_type() -> None:
    parser = argparse.ArgumentParser()
    add_muse_arguments(parser)
    args = parser.parse_args(["--budget", "11", "--branch-temperature", "1.0", "--join", "select"])
    assert (args.budget, args.branch_temperature, args.join) == (11, 1.0, "select")
    assert args.rounds is None  # unset: the graph's own default


@dataclass(frozen=True, kw_only=True)
class _Base:
    """Loop settings.

    Attributes:
        max_turns: Search rounds.
    """

    max_turns: int = 4


@dataclass(frozen=True, kw_only=True)
class _Settings(_Base):
    """Some settings.

    Attributes:
        width: Branches a step (see :mod:`..plan`); more text. Not this.
        style: How it is ``written``: the rest.
        prompt: A template.
        cap: Most of them, ``None``: no cap.
        seed: Seeds.
    """

    width: int = 2
    style: Literal["a", "b"] = "a"
    prompt: str = "hello"
    cap: float | None = None
    seed: int = 0


def test_flags_come_from_the_fields_the_class_declares_and_its_docstring() -> None:
    options = muse_options(_Settings)
    # Inherited loop settings, strings (prompts) and the sampling seed are not flags.
    assert list(options) == ["width", "style", "cap"]
    assert options["width"] == {"type": int, "help": "branches a step (see plan) (default 2)"}
    assert options["style"] == {"choices": ("a", "b"), "help": "how it is written (default a)"}
    assert options["cap"] == {"type": float, "help": "most of them, None (default None)"}
