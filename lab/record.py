"""What made a figure: the commit, the models and adapters by hash, the machine, the wall time.

Written into the output folder's ``summary.json``, under ``experiments`` -> the experiment's
name, beside what the harness puts there (the graphs' means) and the records of other
experiments writing into the same folder. Read back and extended when a run is resumed:
``invocations`` lists every piece of the run that finished (commit, machine, wall time), so
figures from two machines or two commits say so. A piece killed before its end leaves no entry:
its rows stay, and the harness folders' ``run.json`` list the commits that wrote them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph_parallel.eval.results import SUMMARY_FILE
from langgraph_parallel.models.cpu import machine
from langgraph_parallel.models.identity import model_identity
from langgraph_parallel.paths import source_commit

__all__ = ["earlier_records", "model_identity", "write_record"]


def _read(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def earlier_records(out: Path) -> dict[str, Any]:
    """Return the experiments' records in ``out/summary.json`` (name -> record).

    Read before a run starts: the harness rewrites ``summary.json`` when it resumes.
    """
    return dict(_read(out / SUMMARY_FILE).get("experiments") or {})


def write_record(
    out: Path,
    *,
    experiment: str,
    command: str,
    settings: Mapping[str, Any],
    models: list[str],
    wall_s: float,
    earlier: Mapping[str, Any],
) -> Path:
    """Merge the run's record into ``out/summary.json`` (atomically) and return its path.

    The record, under ``experiments`` -> ``experiment``: ``command``, ``settings``, ``commit``
    and ``machine`` (of this piece), ``models`` (name -> :func:`model_identity`), ``wall_s``
    (all pieces) and ``invocations``, the earlier pieces taken from ``earlier`` (what
    :func:`earlier_records` read before the run), as are the other experiments' records.
    Everything else in the file stays.
    """
    path = out / SUMMARY_FILE
    here = machine()
    piece = {
        "commit": source_commit(),
        "machine": here,
        "wall_s": round(wall_s, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    invocations = [*(earlier.get(experiment) or {}).get("invocations", []), piece]
    summary = _read(path)
    summary["experiments"] = {
        **earlier,
        **(summary.get("experiments") or {}),
        experiment: {
            "command": command,
            "settings": dict(settings),
            "commit": piece["commit"],
            "machine": here,
            "models": {m: model_identity(m) for m in models},
            "wall_s": round(sum(float(p.get("wall_s") or 0) for p in invocations), 1),
            "invocations": invocations,
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
