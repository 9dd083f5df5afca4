"""The Search-R1 dialect: a tool-calling conversation as the trained policies read and write it.

``ChatVLLM`` and ``ChatVLLMServer`` look it up by name when tools are bound
(:func:`~langgraph_parallel.models.dialect.tool_dialect`, the ``search-r1`` entry point): the
conversation becomes the graphs' transcript (:mod:`.transcript`) and each decoded step a
``search`` call or an answer (:mod:`.tool_calls`). It sits above ``prompts`` and ``protocol``,
beside ``models``, which never imports it.
"""

from __future__ import annotations

from typing import Any

from langgraph_parallel.dialect.tool_calls import card_kind, prepare_tool_step
from langgraph_parallel.prompts import raw_prompt
from langgraph_parallel.protocol import STOP_SEQUENCES, action_regex

__all__ = ["SEARCH_R1", "SearchR1Dialect"]


class SearchR1Dialect:
    """``<think>``, ``<search> a ## b </search>``, ``<answer>``: the package's trained policies.

    Implements :class:`~langgraph_parallel.models.dialect.ToolDialect`.
    """

    prepare = staticmethod(prepare_tool_step)
    """Prepare a call with bound tools (:func:`~.tool_calls.prepare_tool_step`)."""

    def warm_up_calls(self, question: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """Return one step of each action grammar: ParallelSearch's and Search-R1's."""
        return [
            (
                raw_prompt(question, decompose, card_kind(kind)),
                {"stop": list(STOP_SEQUENCES), "regex": action_regex(decompose)},
            )
            for decompose in (True, False)
        ]


SEARCH_R1 = SearchR1Dialect()
"""The dialect registered as ``search-r1``."""
