"""A report without a model call: the trajectory's own plan, searches, findings and answer.

ParallelMuse's reports compress each trajectory with one model call, whose prompt holds the
whole trajectory, observations included: measured at about twice the agent's own tokens per
question on SmolLM2. For small raw-prompt models the generated report adds little to what the
trajectory already states, so ``report_style="extract"`` writes the report from the trajectory
itself, in the same three sections the report prompt asks for: the first ``<think>`` as the
plan, one bullet per search with the titles its observation returned, the last ``<think>`` as
the reasoning, and the answer line. It costs no tokens; the analyst reads it like any report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langgraph_parallel.protocol import parse_action

__all__ = ["extract_report"]

_TITLE = re.compile(r"\(Title: ([^)\n]*)\)")


def extract_report(trajectory: Mapping[str, Any]) -> str:
    """Return the Markdown report of ``trajectory`` built from its messages (module docstring).

    Args:
        trajectory: A ParallelMuse trajectory (``messages`` as ``{"role", "content"}`` dicts,
            the first one the prompt; ``answer``).
    """
    messages = list(trajectory["messages"])[1:]
    thinks: list[str] = []
    searches: list[str] = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        action = parse_action(message["content"])
        if action.think:
            thinks.append(action.think)
        if action.kind == "search":
            following = messages[index + 1]["content"] if index + 1 < len(messages) else ""
            titles = list(dict.fromkeys(_TITLE.findall(following)))
            found = "; ".join(titles) if titles else "nothing"
            searches.append(f"- searched {' ## '.join(action.queries)}: found {found}")
    plan = thinks[0] if thinks else "(no plan stated)"
    reasoning = thinks[-1] if thinks else "(no reasoning stated)"
    return "\n".join(
        [
            "## Solution Planning",
            plan,
            "",
            "## Solution Methods",
            *(searches or ["- no search"]),
            "",
            "## Final Reasoning",
            reasoning,
            "",
            f"Answer: {trajectory.get('answer') or 'unknown'}",
        ]
    )
