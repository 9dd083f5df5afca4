"""Draw every graph as Mermaid from the code and write the drawings into ``docs/graphs.md``.

    .venv/bin/python -m lab.graph_drawings # rewrite the page's graph section
    .venv/bin/python -m lab.graph_drawings --check # exit 1 if it is stale (unit test)

The graphs are built exactly as Studio builds them (`langgraph_parallel.apps.studio`), but over a
fake chat model and a fake searcher: drawing needs the structure only, so no engine starts and no
index is built. `docs/graphs.md` gets every graph with its caption, subgraphs expanded; graphs
whose drawings are identical share one picture; README.md links the page. Only the text between
`<!-- graphs:start -->` and `<!-- graphs:end -->` is replaced.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from langgraph_parallel.apps.studio import STUDIO_GRAPHS, studio_graph
from langgraph_parallel.parallel_search.graph import create_fan_out_search_graph
from langgraph_parallel.retrieval.documents import Passage

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "graphs.md"
START, END = "<!-- graphs:start -->", "<!-- graphs:end -->"

CAPTIONS = {
    "parallel_search": "ParallelSearch: `create_parallel_search_graph(model, search)`. `think` "
    "routes with `Command` (dotted edges); `fan_out` sends one `search` branch per sub-query and "
    "`observe` joins them.",
    "sequential_search": "The sequential Search-R1 baseline: the same graph with "
    "`decompose=False`.",
    "parallel_muse": "ParallelMuse: "
    "`create_parallel_muse_graph(parallel_search_rollouts(model, search))`. `router` sends "
    "rollouts and forks from uncertain steps (ranked by the perplexity of a region's tokens, "
    '`mode="ppl"`, or by their entropy; `min_branch_step=1`, the default, never forks at step '
    "0, whose fork would be a fresh rollout; `0` is the paper's any step; never after a "
    "repeated search; a round that finds fewer steps than `top_k_steps` shares their samples "
    "among those it found), then one `report` per "
    "distinct trajectory (one whose "
    "steps and answer equal another's gets a copy of its report, `reused_from` naming the "
    'source; `reports="contested"` writes reports only when the analyst will read them and '
    'otherwise goes straight to `aggregate`; `reports="all"` reports every trajectory), written '
    "by a model call for chat models and from the trajectory itself for raw-prompt ones "
    '(`report_style="auto"`); '
    "`aggregate` joins them. Each `rollout` is one run of the ParallelSearch graph (above, each "
    "step's logprobs kept) in a thread of its own: the first on the question, the forks from the "
    "checkpoint before the most uncertain step (LangGraph's time travel), as over any agent.",
    "parallel_search_agent": "ParallelSearch in langchain's `create_agent`: "
    "`create_agent(model, tools=[parallel_search_tool(search)], "
    "middleware=[ParallelSearchMiddleware()])`; the `search` tool runs a call's sub-queries (up "
    "to its cap) as one batched retrieval, the middleware adds the decomposition instruction, the "
    "turn limit and the graph's counters (`examples/03_create_agent_parallel_search.py`).",
    "parallel_muse_agent": "ParallelMuse over any checkpointed agent: "
    "`create_parallel_muse_graph(agent)`, here the `parallel_search_agent` app with an "
    "`InMemorySaver`. "
    "`router` first reads the input (messages, a question, or a finished `from_thread`); each "
    "`rollout` "
    "is one run of the agent in a thread of its own, the first on the input, the others forked "
    "from the checkpoint before the most uncertain step (ranked from the logprobs of the "
    "agent's replies); `report` and `aggregate` as in `parallel_muse` "
    "(`examples/04_parallel_muse_any_agent.py`).",
    "fan_out_search": "The fan-out step alone: `create_fan_out_search_graph(search)`, or "
    "`add_parallel_search(builder, search)` to add it to your own graph "
    "(`examples/01_add_fan_out_to_your_graph.py`).",
}

STUDIO_NOTE = """\
Serve them to LangGraph Studio (or any LangGraph SDK client) with `.venv/bin/langgraph dev`;
`langgraph.json` lists the graphs. They use the embedded model and the bundled corpus unless
`OPENAI_BASE_URL` (a vLLM server, model name in `LANGGRAPH_PARALLEL_MODEL`) or
`LANGGRAPH_PARALLEL_SEARCH=tavily` (with `TAVILY_API_KEY`) say otherwise; see
`langgraph_parallel/apps/studio.py` for every setting.
"""


class _NoSearch:
    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        return [[] for _ in queries]


def drawings(xray: int = 1) -> dict[str, str]:
    """Return graph id -> Mermaid text, for every Studio graph and the fan-out step."""
    model = GenericFakeChatModel(messages=iter(()))
    graphs = {gid: studio_graph(gid, model=model, search=_NoSearch()) for gid in STUDIO_GRAPHS}
    graphs["fan_out_search"] = create_fan_out_search_graph(_NoSearch())
    return {gid: g.get_graph(xray=xray).draw_mermaid().strip() for gid, g in graphs.items()}


def section() -> str:
    """Return the text of ``docs/graphs.md`` between the markers (markers excluded)."""
    groups: dict[str, list[str]] = {}
    for gid, mermaid in drawings().items():
        groups.setdefault(mermaid, []).append(gid)
    parts = [
        "<!-- Generated by `lab/graph_drawings.py` from the code; do not edit by hand. -->",
        STUDIO_NOTE,
    ]
    for mermaid, ids in groups.items():
        title = ", ".join(f"`{gid}`" for gid in ids)
        captions = " ".join(CAPTIONS.get(gid, "") for gid in ids).strip()
        parts.append(f"### {title}\n\n{captions}\n\n```mermaid\n{mermaid}\n```\n")
    return "\n" + "\n".join(parts)


def updated(text: str, body: str, name: str = "the file") -> str:
    """Return ``text`` with the part between the markers replaced by ``body``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise SystemExit(f"error: {name} needs one {START} ... {END} pair")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}{body}{END}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only check) the graph sections; 1 when one is stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a drawing is stale")
    parser.add_argument("--page", type=Path, default=PAGE, help="the docs page of every graph")
    args = parser.parse_args(argv)
    stale = 0
    for path, body in ((args.page, section()),):
        current = path.read_text(encoding="utf-8")
        fresh = updated(current, body, str(path))
        if args.check:
            if fresh != current:
                print(
                    f"{path}: graph drawings are stale; run "
                    "`.venv/bin/python -m lab.graph_drawings` and commit the file.",
                    file=sys.stderr,
                )
                stale = 1
            else:
                print(f"{path}: graph drawings are up to date")
        elif fresh != current:
            path.write_text(fresh, encoding="utf-8")
            print(f"{path}: graph drawings updated")
        else:
            print(f"{path}: graph drawings already up to date")
    return stale


if __name__ == "__main__":
    sys.exit(main())
