"""``bench`` options for ParallelMuse runs: graph settings, a fresh prefix cache, context corpora.

The ParallelMuse benchmark (long trajectories, partial vs independent rollouts) runs through the
one harness, ``bench``; these options are what it needs beyond the other graphs:

- ``--budget``, ``--region``, ... (the ``MuseContext`` fields a sweep varies, read from the
  dataclass: :func:`muse_options`), passed to the registry's ParallelMuse graphs only
  (:data:`~langgraph_parallel.apps.registry.MUSE_GRAPHS`);
- ``--fresh-cache``: empty the engine's prefix cache before each graph, so a system's cached
  prompt tokens come from its own calls, never from another system's run of the same questions;
- ``--corpus contexts``: search a file's questions among its rows' own paragraphs (2Wiki and
  MuSiQue ship no shared corpus; :func:`~langgraph_parallel.eval.contexts.context_corpus_of`).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.apps.registry import MUSE_GRAPHS
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_muse.context import MuseContext

__all__ = [
    "MUSE_OPTIONS",
    "add_muse_arguments",
    "fresh_cache_hook",
    "muse_options",
]

_NOT_FLAGS = ("temperature", "top_p", "seed")
"""``MuseContext`` fields that are no ParallelMuse flag of ``bench``: the sampling of every agent
step (the policy's; ``bench --seed`` seeds it)."""


def _attribute_help(cls: type) -> dict[str, str]:
    """Return field name -> the first clause of its entry in ``cls``'s ``Attributes:`` section.

    The clause ends at the first ``.``, ``;`` or ``:`` outside parentheses; Sphinx roles and
    literals are written plain (``:mod:`..plan``` -> ``plan``), the first letter lower-cased.
    """
    _, _, section = (inspect.getdoc(cls) or "").partition("Attributes:\n")
    entries: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        if found := re.match(r"    (\w+): (.*)$", line):
            name, entries[found[1]] = found[1], found[2]
        elif line.startswith("        ") and name:
            entries[name] += " " + line.strip()
        else:
            break
    return {key: _first_clause(text) for key, text in entries.items()}


def _first_clause(text: str) -> str:
    text = re.sub(r":\w+:`~?\.*(?:\w+\.)*(\w+)`", r"\1", text).replace("``", "")
    depth = 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and char in ".;:" and text[i + 1 : i + 2] in ("", " "):
            text = text[:i]
            break
    return text[:1].lower() + text[1:]


def _flag_type(hint: Any) -> dict[str, Any] | None:
    """Return the argparse ``type``/``choices`` of a field's type (``None``: not a flag)."""
    if typing.get_origin(hint) is typing.Literal:
        return {"choices": typing.get_args(hint)}
    if isinstance(hint, types.UnionType):  # an optional number: ``float | None``
        kinds = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = kinds[0] if len(kinds) == 1 else None
    return {"type": hint} if hint in (int, float) else None


def muse_options(context: type = MuseContext) -> dict[str, dict[str, Any]]:
    """Return ``bench``'s ParallelMuse flags, one a field of ``context``'s own settings.

    Every field ``context`` declares itself (not the loop settings it builds on) whose type is a
    number or a ``Literal`` of choices becomes a flag with that type or those choices; its help
    is the first clause of the field's entry in the class docstring, with its default. The
    prompts (strings) and :data:`_NOT_FLAGS` are not flags.
    """
    hints = typing.get_type_hints(context)
    helps = _attribute_help(context)
    own = inspect.get_annotations(context)
    options: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(context):
        kind = _flag_type(hints[f.name])
        if f.name not in own or f.name in _NOT_FLAGS or kind is None:
            continue
        options[f.name] = {**kind, "help": f"{helps.get(f.name) or f.name} (default {f.default})"}
    return options


MUSE_OPTIONS: dict[str, dict[str, Any]] = muse_options()
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
