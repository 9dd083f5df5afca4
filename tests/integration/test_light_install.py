"""The light install: the wheel without extras, in a new virtual environment, runs a graph.

A user with a model and retriever of their own needs neither vLLM nor torch nor the bundled
corpus: ``pip install`` of the wheel alone brings LangGraph, langchain-core, numpy and tqdm
(``docs/guides/quickstart.md``, "As a library in your own stack"). This builds the wheel from the
tree, installs it into an empty venv from the package index, and runs ParallelSearch there with
langchain-core's own fake chat model and a retriever of a few lines.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import importlib.util
    from langchain_core.documents import Document
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.retrievers import BaseRetriever
    from langgraph_parallel import create_parallel_search_graph

    class Shelf(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(f"{query}\\nAll about {query}.")]

    model = GenericFakeChatModel(messages=iter([
        AIMessage("<think>two</think><search> Paris ## Rome </search>"),
        AIMessage("<answer> Paris </answer>"),
    ]))
    state = create_parallel_search_graph(model, Shelf(), top_k=1, prompt_style="raw").invoke(
        {"question": "Which is older, Paris or Rome?"}
    )
    assert state["answer"] == "Paris", state
    assert "All about Rome." in state["transcript"][2].content
    heavy = [m for m in ("torch", "vllm", "transformers") if importlib.util.find_spec(m)]
    print("light:", heavy == [], "answer:", state["answer"])
    """
)


def test_the_wheel_without_extras_installs_light_and_runs_a_graph(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("langgraph_parallel-*.whl")
    # The library only: no lab, experiments, result writers, tests or tools.
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"langgraph_parallel", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=600)
    done = subprocess.run(
        [str(python), "-c", SCRIPT], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "light: True answer: Paris" in done.stdout

    # The lab's commands say where they live instead of failing on an import.
    cli = venv / "bin" / "langgraph-parallel"
    listing = subprocess.run(
        [str(cli), "bench", "list"], capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 2 and "lab/ of a clone" in listing.stderr, listing.stderr
    chains = subprocess.run(
        [str(cli), "train", "chains", "heldout", "--out", "x.jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert chains.returncode == 2 and "lab/ of a clone" in chains.stderr, chains.stderr
