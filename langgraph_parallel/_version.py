"""The installed version of langgraph-parallel (``langgraph_parallel.__version__``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "langgraph-parallel"


def installed_version() -> str:
    """Return the version pip installed; from a source tree that is not installed, its own.

    An uninstalled tree (``PYTHONPATH=.``) reads ``pyproject.toml`` beside the package, marked
    ``+source``; without one the version is ``0+unknown``.
    """
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return "0+unknown"
    if project.get("name") != DISTRIBUTION or not project.get("version"):
        return "0+unknown"
    return f"{project['version']}+source"


__version__ = installed_version()
