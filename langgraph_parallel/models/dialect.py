"""The tool dialect a chat model over vLLM speaks when tools are bound: its contract and lookup.

A raw-prompt policy writes steps of text (the Search-R1 tags); tool-calling code wants
``tool_calls``. Turning one into the other is the policy's protocol, not the engine's, so the
chat models here do not know it: they ask a :class:`ToolDialect` to prepare a call with bound
tools and to read the reply back. A chat model's ``dialect`` is a dialect object, or a name:
the package's own (``search-r1``, :mod:`langgraph_parallel.dialect`) is found by its target
alone, so a source tree that was never installed has it too; any other is found through the
``langgraph_parallel.dialects`` entry points, as vLLM finds its plugins: a policy trained on
another step format registers its own under its own name (or is handed its object). Either way
the import points from the protocol to the models, never back: ``models/`` names the target as
text, as an entry point does, and imports nothing of it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from langgraph_parallel.errors import UserError

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECT_GROUP",
    "OWN_DIALECTS",
    "ToolDialect",
    "ToolReader",
    "tool_dialect",
]

DIALECT_GROUP = "langgraph_parallel.dialects"
"""The entry-point group dialects are registered in."""
DEFAULT_DIALECT = "search-r1"
"""The dialect of the policies this package trains (``<search> a ## b </search>``)."""
OWN_DIALECTS: dict[str, str] = {DEFAULT_DIALECT: "langgraph_parallel.dialect:SEARCH_R1"}
"""The package's own dialects: name -> the target its entry point names in ``pyproject.toml``
(a test keeps the two the same), loaded without the installed entry points."""


class ToolReader(Protocol):
    """Reads the reply of one prepared call as tool calls."""

    def reply(self, result: ChatResult) -> ChatResult:
        """Return ``result`` with every sample read as a tool-calling reply."""
        ...


@runtime_checkable
class ToolDialect(Protocol):
    """How a raw-prompt policy's steps become tool calls, and back."""

    def prepare(
        self,
        messages: Sequence[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        *,
        style: Literal["chat", "raw"],
        kind: str,
        regex: str | None,
    ) -> tuple[list[BaseMessage], list[str] | None, ToolReader | None]:
        """Turn a call with bound tools into a policy step (pops the tool options of ``kwargs``).

        Returns the messages to complete, the stop sequences and the reader of the reply; a
        call without tools comes back unchanged with ``None``.
        """
        ...

    def warm_up_calls(self, question: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """Return the raw prompts and call options whose first use is slow on a new server."""
        ...


def tool_dialect(dialect: str | ToolDialect = DEFAULT_DIALECT) -> ToolDialect:
    """Return ``dialect``'s object: itself when it is one, else the dialect of that name.

    Raises:
        UserError: No dialect of that name is the package's own or installed.
    """
    return dialect if isinstance(dialect, ToolDialect) else _named(dialect)


@functools.cache
def _named(name: str) -> ToolDialect:
    """Return the dialect called ``name`` (looked up once per process)."""
    if name in OWN_DIALECTS:
        own = EntryPoint(name=name, value=OWN_DIALECTS[name], group=DIALECT_GROUP)
        dialect: ToolDialect = own.load()
        return dialect
    found = entry_points(group=DIALECT_GROUP, name=name)
    if not found:
        names = sorted({*OWN_DIALECTS, *(ep.name for ep in entry_points(group=DIALECT_GROUP))})
        raise UserError(
            f"no tool dialect {name!r} is installed (known: {', '.join(names)}). Set the chat "
            f"model's dialect to one of those or to a dialect object, or register yours under "
            f"the {DIALECT_GROUP!r} entry points."
        )
    dialect = next(iter(found)).load()
    return dialect
