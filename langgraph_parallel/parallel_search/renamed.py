"""ParallelSearch's renamed settings: the old keywords, read for one release with a warning.

Every way in (the graph factories, ``add_parallel_search``,
:func:`~.agent_tool.parallel_search_tool` and :class:`~.middleware.ParallelSearchMiddleware`)
names a setting as the graph does
(``max_parallel_queries``, ``top_k``, ``search_timeout``, ``max_turns``). The tool and the
middleware had names of their own; :func:`renamed_keywords` still takes those, under the new
name, and says which name to use. The old names go in the release after the one that says so
in ``CHANGELOG.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["RENAMED", "renamed_keywords"]

RENAMED: Mapping[str, str] = {
    "max_sub_queries": "max_parallel_queries",
    "k": "top_k",
    "timeout": "search_timeout",
    "max_searches": "max_turns",
}
"""Old keyword -> the graph's name of the same setting."""


def renamed_keywords(
    where: str,
    given: Mapping[str, Any],
    accepted: Mapping[str, str] = RENAMED,
    *,
    owners: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return the old keywords in ``given`` under their new names, warning once for each.

    Args:
        where: The callable that took them (named in the warning and the errors).
        given: The keywords the caller passed that the signature does not name.
        accepted: Old name -> new name, the old names ``where`` still takes.
        owners: New name -> the callable that takes it now, for a setting that moved to
            another one (the warning names it); by default ``where``.

    Returns:
        New name -> value, for each old name in ``given``.

    Raises:
        TypeError: A keyword in ``given`` is not an old name ``where`` takes (Python's own
            error for an unexpected keyword).
    """
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    found: dict[str, Any] = {}
    for old, value in given.items():
        new = accepted[old]
        owner = (owners or {}).get(new, where)
        warnings.warn(
            f"{where}({old}=...) is deprecated and goes in the next release: "
            f"use {owner}({new}={value!r}).",
            DeprecationWarning,
            stacklevel=3,
        )
        found[new] = value
    return found
