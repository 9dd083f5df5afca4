"""The tool dialect a chat model over vLLM speaks when tools are bound: its contract and lookup.

A raw-prompt policy writes steps of text (the Search-R1 tags); tool-calling code wants
``tool_calls``. Turning one into the other is the policy's protocol, not the engine's, so the
chat models here do not know it: they ask a :class:`ToolDialect` to prepare a call with bound
tools and to read the reply back. Dialects are found by name through the
``langgraph_parallel.dialects`` entry points (the package registers ``search-r1``,
:mod:`langgraph_parallel.dialect`), as vLLM finds its plugins; a policy trained on another step
format registers its own under its own name and sets the chat model's ``dialect`` to it. An
entry point keeps the import pointing from the protocol to the models, never back.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from langgraph_parallel.errors import UserError

__all__ = ["DEFAULT_DIALECT", "DIALECT_GROUP", "ToolDialect", "ToolReader", "tool_dialect"]

DIALECT_GROUP = "langgraph_parallel.dialects"
"""The entry-point group dialects are registered in."""
DEFAULT_DIALECT = "search-r1"
"""The dialect of the policies this package trains (``<search> a ## b </search>``)."""


class ToolReader(Protocol):
    """Reads the reply of one prepared call as tool calls."""

    def reply(self, result: ChatResult) -> ChatResult:
        """Return ``result`` with every sample read as a tool-calling reply."""
        ...


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


@functools.cache
def tool_dialect(name: str = DEFAULT_DIALECT) -> ToolDialect:
    """Return the dialect registered as ``name`` (read once per process).

    Raises:
        UserError: No dialect of that name is installed.
    """
    found = entry_points(group=DIALECT_GROUP, name=name)
    if not found:
        names = sorted(ep.name for ep in entry_points(group=DIALECT_GROUP))
        raise UserError(
            f"no tool dialect {name!r} is installed (installed: {names or 'none'}). Set the "
            f"chat model's dialect to one of those, or register yours under the "
            f"{DIALECT_GROUP!r} entry points; if 'search-r1' is missing, reinstall the package "
            "(pip install -e . in a checkout)."
        )
    dialect: ToolDialect = next(iter(found)).load()
    return dialect
