"""A picture of one ParallelMuse run: its trajectories as a tree, as Mermaid text or PNG/SVG.

The tree has the question at the root and one node per step *generated* (a trajectory's own
steps, ``origin == id``). A fork with ``branch_step=k`` inherits its parent's steps ``0..k-1``
and re-generates step ``k``, so its first own step hangs under the node of step ``k-1`` (the
question for ``k=0``); fresh rollouts hang under the question. Each trajectory ends in a leaf
with its answer or stop reason. Step nodes show the action and the step's uncertainty per region
(:func:`~.uncertainty.region_score`, the score the router ranks by); the steps the router forked
at (``branch_points``) and the path of the trajectory ``aggregation["chosen"]`` are marked.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.parallel_muse.regions import REGION_NAMES
from langgraph_parallel.parallel_muse.uncertainty import Mode, region_score
from langgraph_parallel.protocol.parse import parse_action

__all__ = [
    "TREE_SUFFIXES",
    "TreeNode",
    "check_tree_path",
    "draw_tree",
    "mermaid_tree",
    "tree_nodes",
]

TREE_SUFFIXES: tuple[str, ...] = (".png", ".svg", ".mmd", ".md")
# Mermaid entity codes; "#" first, since every code starts with one.
_MERMAID_CODES = {
    "#": "#35;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "[": "#91;",
    "]": "#93;",
    "`": "#96;",
    "&": "#amp;",
}
# parse_math=False: model text with "$" must not be read as mathtext.
_TEXT_STYLE: dict[str, Any] = {"ha": "center", "va": "center", "fontsize": 7, "parse_math": False}
_CLASS_DEFS = {
    "chosen": "fill:#dff5df,stroke:#2a8a2a,stroke-width:2px",
    "branch": "stroke:#d97706,stroke-width:3px,stroke-dasharray:5 3",
    "unanswered": "fill:#eeeeee,color:#666666,stroke-dasharray:3 3",
}


@dataclass(frozen=True)
class TreeNode:
    """One node of the tree.

    Attributes:
        id: A Mermaid-safe id (``q`` for the question, ``s<n>`` steps, ``a<n>`` leaves).
        parent: The parent's id (``None`` for the question).
        depth: 0 for the question, ``i + 1`` for step ``i``, one below its parent for a leaf.
        kind: ``question``, ``step`` or ``leaf``.
        lines: The label, one line per item (plain text, unescaped).
        trajectory: The trajectory that generated the step (or ends in the leaf).
        step: The step index (``None`` for the question and leaves).
        chosen: On the path of the chosen trajectory.
        branch_point: The router forked at this step.
        unanswered: A leaf whose trajectory gave no answer.
    """

    id: str
    parent: str | None
    depth: int
    kind: str
    lines: tuple[str, ...]
    trajectory: str | None = None
    step: int | None = None
    chosen: bool = False
    branch_point: bool = False
    unanswered: bool = False


def _short(text: Any, width: int = 48) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _step_lines(step: Mapping[str, Any], index: int, mode: Mode) -> list[str]:
    kind = str(step.get("action") or "invalid")
    text, calls = str(step.get("text") or ""), step.get("tool_calls") or []  # agents' calls
    # The step is re-parsed: steps store the action's kind, not its queries or answer.
    action = parse_action(text, calls)
    details = {
        "search": " ## ".join(action.queries),
        "answer": action.answer or text,
        "tool": ", ".join(str(call.get("name")) for call in calls),
    }
    what = details.get(kind, "model call failed" if kind == "error" else action.error or "")
    head = f"{step.get('origin')} step {index}: {kind}"
    lines = [head, _short(what)] if what else [head]
    scores = [(r, region_score(step, r, mode)) for r in REGION_NAMES]
    shown = ", ".join(f"{r} {s:.2f}" for r, s in scores if s is not None)
    return [*lines, f"{mode}: {shown}"] if shown else lines


def tree_nodes(output: Mapping[str, Any], *, mode: Mode | None = None) -> list[TreeNode]:
    """Build the tree of a ParallelMuse (or rollouts) graph output (a ``MuseOutput`` mapping).

    Args:
        output: ``question``, ``trajectories``, ``branch_points``, ``aggregation``; the last two
            may be missing (nothing is then marked).
        mode: The score shown per region, ``ppl`` or ``entropy``; by default the one that
            picked the run's branch points (``ppl``, the graphs' default, when none says).

    Returns:
        The nodes, the question first, every parent before its children.
    """
    trajectories = sorted(output.get("trajectories") or [], key=lambda t: int(t.get("index", 0)))
    points = {(str(p["trajectory"]), int(p["step"])): p for p in output.get("branch_points") or []}
    picked = next((p["mode"] for p in points.values() if "mode" in p), "ppl")
    shown: Mode = mode if mode is not None else "entropy" if picked == "entropy" else "ppl"
    chosen_id = (output.get("aggregation") or {}).get("chosen")
    chosen = [t for t in trajectories if t["id"] == chosen_id]
    # A step node is keyed by (generating trajectory, step index): inherited copies share it.
    chosen_keys = {(str(s.get("origin")), i) for t in chosen for i, s in enumerate(t["steps"])}
    question = ("question", *textwrap.wrap(str(output.get("question") or ""), 40, max_lines=3))
    nodes = [TreeNode("q", None, 0, "question", question, chosen=bool(chosen))]
    ids: dict[tuple[str, int], str] = {}
    for t in trajectories:
        tid, steps = str(t["id"]), list(t.get("steps") or [])
        keys = [(str(step.get("origin")), i) for i, step in enumerate(steps)]
        # The node above step i: step i-1 as this trajectory sees it (own or inherited).
        above = ["q", *(ids.get(key, "q") for key in keys)]
        for i, step in enumerate(steps):
            if keys[i][0] != tid:
                continue
            lines = _step_lines(step, i, shown)
            point = points.get((tid, i))
            if point:
                score = f"{point.get('mode', '')} {float(point['score']):.2f}".strip()
                lines.append(f"branch point ({point['region']} {score})")
            ids[keys[i]] = above[i + 1] = f"s{len(nodes)}"
            node = TreeNode(ids[keys[i]], above[i], i + 1, "step", tuple(lines), tid, i)
            nodes.append(replace(node, chosen=keys[i] in chosen_keys, branch_point=bool(point)))
        answer = t.get("answer")
        fork = f" (fork of {t['parent']} at step {t.get('branch_step')})" if t.get("parent") else ""
        lines = [f"{tid}{fork}", f"answer: {_short(answer, 40)}" if answer else "no answer"]
        if not answer or t.get("stop_reason") != "answered":
            lines.append(_short(t.get("stop_reason") or "", 40))
        if tid == chosen_id:
            lines.append("(chosen)")
        leaf = TreeNode(f"a{len(nodes)}", above[-1], len(steps) + 1, "leaf", tuple(lines), tid)
        nodes.append(replace(leaf, chosen=tid == chosen_id, unanswered=not answer))
    return nodes


def _mermaid_label(lines: tuple[str, ...]) -> str:
    escaped = ["".join(_MERMAID_CODES.get(c, c) for c in line) for line in lines]
    return '"' + "<br/>".join(escaped) + '"'


def mermaid_tree(output: Mapping[str, Any], *, mode: Mode | None = None) -> str:
    """Return the tree (see :func:`tree_nodes`) as a Mermaid ``flowchart TD``.

    Labels are quoted and use Mermaid entity codes (``#quot;``, ``#91;``, ``#lt;``, ...) for
    characters Mermaid would read as syntax, so model text cannot break the diagram. Classes:
    ``chosen`` (the chosen trajectory's path; its edges are drawn thicker too), ``branch``
    (branch points) and ``unanswered`` (leaves without an answer).
    """
    nodes = tree_nodes(output, mode=mode)
    chosen = {n.id for n in nodes if n.chosen}
    lines = ["flowchart TD"]
    lines += [f"    {n.id}[{_mermaid_label(n.lines)}]" for n in nodes]
    edges = [(n.parent, n.id) for n in nodes if n.parent is not None]
    lines += [f"    {a} --> {b}" for a, b in edges]
    thick = [str(k) for k, (a, b) in enumerate(edges) if a in chosen and b in chosen]
    if thick:
        lines.append(f"    linkStyle {','.join(thick)} stroke:#2a8a2a,stroke-width:3px")
    lines += [f"    classDef {name} {style}" for name, style in _CLASS_DEFS.items()]
    for name, flag in (("chosen", "chosen"), ("branch", "branch_point"), ("unanswered",) * 2):
        if members := [n.id for n in nodes if getattr(n, flag)]:
            lines.append(f"    class {','.join(members)} {name}")
    return "\n".join(lines) + "\n"


def check_tree_path(path: str | Path) -> Path:
    """Validate where a tree goes before anything slow runs; return it as a ``Path``.

    Raises:
        ValueError: The suffix is none of :data:`TREE_SUFFIXES`.
        UserError: A PNG/SVG without matplotlib, or a folder that does not exist.
    """
    path = Path(path)
    if path.suffix.lower() not in TREE_SUFFIXES:
        raise ValueError(f"Cannot write a tree to {path}: use one of {', '.join(TREE_SUFFIXES)}.")
    if not path.parent.is_dir():
        raise UserError(f"Cannot write a tree to {path}: folder {path.parent} does not exist.")
    if path.suffix.lower() in (".png", ".svg"):
        try:
            import matplotlib  # noqa: F401
        except ImportError as exc:
            hint = f"{install_hint('eval')}, or write .mmd/.md Mermaid text"
            raise UserError(f"Drawing a tree as PNG/SVG needs matplotlib: {hint}.") from exc
    return path


def draw_tree(output: Mapping[str, Any], path: str | Path, *, mode: Mode | None = None) -> Path:
    """Write the tree to ``path``: PNG/SVG drawn with matplotlib, ``.mmd``/``.md`` as Mermaid.

    The drawing is hand-written (a layered layout: depth = step number, leaves spread left to
    right, a parent centred over its children) because neither graphviz nor mermaid-cli is on
    the machines we run on, while matplotlib already draws the benchmark plots (the ``eval``
    extra). ``.md`` wraps the Mermaid text in a ```` ```mermaid ```` fence.

    Raises:
        ValueError: Any other suffix (the message names the accepted ones).
        UserError: A PNG/SVG without matplotlib installed.
    """
    path = check_tree_path(path)
    suffix = path.suffix.lower()
    if suffix in (".mmd", ".md"):
        text = mermaid_tree(output, mode=mode)
        path.write_text(f"```mermaid\n{text}```\n" if suffix == ".md" else text, encoding="utf-8")
        return path
    from matplotlib.figure import Figure

    nodes = tree_nodes(output, mode=mode)
    x, by_id = _layout(nodes), {n.id: n for n in nodes}
    width, depth = max(x.values()) + 1, max(n.depth for n in nodes) + 1
    # A bare Figure (no pyplot, no global backend): savefig renders with Agg (PNG) or SVG.
    figure = Figure(figsize=(max(4.0, 3.0 * width), max(2.5, 1.3 * depth)), dpi=110)
    ax = figure.add_axes((0, 0, 1, 1), xlim=(-0.6, width - 0.4), ylim=(-depth + 0.45, 0.55))
    ax.set_axis_off()
    for n in nodes:
        if n.parent is not None:
            up = by_id[n.parent]
            thick = n.chosen and up.chosen
            colour = "#2a8a2a" if thick else "#999999"
            ax.plot([x[up.id], x[n.id]], [-up.depth, -n.depth], color=colour, lw=1 + 1.5 * thick)
        face = "#dff5df" if n.chosen else "#eeeeee" if n.unanswered else "#ffffff"
        edge = "#d97706" if n.branch_point else "#2a8a2a" if n.chosen else "#666666"
        box = {
            "boxstyle": "round,pad=0.35",
            "facecolor": face,
            "edgecolor": edge,
            "linewidth": 1 + (n.branch_point or n.chosen),
            "linestyle": "--" if n.unanswered or n.branch_point else "-",
        }
        colour = "#555555" if n.unanswered else "black"
        ax.text(x[n.id], -n.depth, "\n".join(n.lines), bbox=box, color=colour, **_TEXT_STYLE)
    figure.savefig(path, format=suffix[1:])
    return path


def _layout(nodes: list[TreeNode]) -> dict[str, float]:
    """Horizontal positions: leaves at 0, 1, 2, ... in depth-first order, parents centred."""
    children: dict[str, list[str]] = {}
    for n in nodes[1:]:  # every node but the question has a parent
        children.setdefault(str(n.parent), []).append(n.id)
    x: dict[str, float] = {}
    next_leaf = 0.0

    def place(node: str) -> float:
        nonlocal next_leaf
        if below := [place(child) for child in children.get(node, [])]:
            x[node] = (below[0] + below[-1]) / 2
        else:
            x[node], next_leaf = next_leaf, next_leaf + 1
        return x[node]

    place(nodes[0].id)
    return x
