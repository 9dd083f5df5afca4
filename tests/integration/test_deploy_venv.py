"""``langgraph.json`` deploys: its install steps, replayed in a new venv, run every graph.

``langgraph build`` / ``langgraph up`` build a Docker image from ``langgraph.json``. There is no
Docker here, so this tests what decides whether the image runs: its dependency set. LangGraph's
own CLI writes the image's Dockerfile (``langgraph dockerfile``, offline); its ``uv pip install``
lines are run by ``sh`` as ``docker build`` runs them, into an empty venv instead of the image's
system Python, and with the package folder the Dockerfile ``ADD``s linked instead of copied.
Two things differ from the image and are left out on purpose: ``-c /api/constraints.txt`` (the
base image's pins of LangGraph Server's own dependencies, a file only the image has) and
``--no-cache-dir`` (the local cache makes the install take seconds). Then, in that venv, every
graph module ``langgraph.json`` names is loaded from its file as the server loads it and answers
one question with the model on a scripted OpenAI-compatible server (``OPENAI_BASE_URL``, as a
deployment points at ``langgraph-parallel serve``) and the default search: the hybrid index over
the bundled corpus.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local_http import JsonHandler, local_server

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def scripted_reply(body: dict[str, Any]) -> str:
    """Return what the scripted model writes for one request, read from its prompt.

    A policy step searches first and answers once its question has an ``<information>`` block;
    a ParallelMuse report ends with the agent's answer and the analyst picks report 1.
    """
    prompt = body.get("prompt")
    if prompt is None:  # a chat-style request
        prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    if prompt.rstrip().endswith("Reply:"):
        return "The reports agree.\n<choice>1</choice>\n<answer> yes </answer>"
    if "## Solution Planning" in prompt and "Trajectory" in prompt:
        return (
            "Both people.\n\n## Solution Methods\n- both American\n\n## Final Reasoning\n"
            "Both are American.\n\nAnswer: yes"
        )
    turn = prompt.rsplit("Question: ", 1)[-1]
    if "<information>" in turn:
        return "<think> both American </think>\n<answer> yes </answer>"
    return "<think> two people </think>\n<search> Ed Wood ## Scott Derrickson </search>"


def _completion(body: dict[str, Any], requests: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``/v1/completions`` reply in vLLM's shape (logprobs as parallel lists, cached tokens)."""
    requests.append(body)
    text = scripted_reply(body)
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)]
    logprobs = {
        "tokens": tokens,
        "token_logprobs": [-0.5] * len(tokens),
        "top_logprobs": [{token: -0.5, "?": -2.0} for token in tokens],
        "text_offset": [4 * i for i in range(len(tokens))],
    }
    n = int(body.get("n") or 1)
    choices = [
        {
            "index": i,
            "text": text,
            "finish_reason": "stop",
            "stop_reason": None,
            "logprobs": logprobs,
        }
        for i in range(n)
    ]
    prompt_tokens = len(str(body.get("prompt") or body.get("messages"))) // 4
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": n * len(tokens),
        "total_tokens": prompt_tokens + n * len(tokens),
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    return {
        "id": "x",
        "object": "text_completion",
        "created": 0,
        "model": body["model"],
        "choices": choices,
        "usage": usage,
    }


@pytest.fixture
def scripted_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": "smollm2-parallel"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if self.path.endswith("/chat/completions"):
                self.send_error(400, "the scripted server answers raw completions only")
                return
            self.send_json(_completion(body, requests))

        def log_message(self, *args: Any) -> None:
            pass

    with local_server(Handler, monkeypatch) as url:
        yield url + "/v1", requests


def _installer(python: Path) -> list[str]:
    """Return ``uv pip install`` into ``python``'s venv with this machine's package sources.

    As ``tools/setup.sh`` does: uv reads neither ``pip.conf`` nor ``PIP_*`` variables, so the
    index, find-links and constraint settings ``pip config list`` shows are passed on. Without
    uv, the venv's own pip (slower).
    """
    uv = BIN / "uv"
    if not uv.is_file():
        return [str(python), "-m", "pip", "install", "-q"]
    command = [str(uv), "pip", "install", "-q", "--python", str(python)]
    command += ["--index-strategy", "unsafe-best-match"]
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    flags = {
        "index-url": "--index-url",
        "extra-index-url": "--extra-index-url",
        "find-links": "--find-links",
        "constraint": "--constraint",
    }
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        flag = flags.get(key.rsplit(".", 1)[-1])
        for item in value.strip("'").split() if flag else ():
            command += [flag, item]
    return command


def dockerfile_installs(dockerfile: str, deps: Path, install: str) -> list[str]:
    """Return the Dockerfile's ``uv pip install`` lines as shell commands for a local venv.

    ``install`` replaces ``uv pip install --system``; ``/deps/`` (where the image keeps the
    ``ADD``-ed packages) becomes ``deps``; the constraints file and ``--no-cache-dir`` are
    dropped (see the module docstring). The line that reinstalls LangGraph Server itself
    (``-e /api``) is the base image's, not ours.
    """
    commands = []
    for line in dockerfile.replace("\\\n", " ").splitlines():
        if not line.startswith("RUN ") or "uv pip install --system" not in line:
            continue
        if line.rstrip().endswith("-e /api"):
            continue
        command = line.removeprefix("RUN ").replace("uv pip install --system", install)
        command = command.replace(" -c /api/constraints.txt", "").replace(" --no-cache-dir", "")
        commands.append(command.replace("/deps/", f"{deps}/"))
    return commands


RUN_GRAPHS = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pathlib import Path

    repo = Path(sys.argv[1])
    for graph_id, ref in json.loads((repo / "langgraph.json").read_text())["graphs"].items():
        path, attr = ref.rsplit(":", 1)
        # As LangGraph Server loads a graph: the module from its file, then the attribute.
        spec = importlib.util.spec_from_file_location(graph_id, repo / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        graph = getattr(module, attr)
        question = sys.argv[2]
        agent = graph_id == "parallel_search_agent"  # create_agent takes messages only
        inputs = {"messages": [{"role": "user", "content": question}]} if agent else {
            "question": question}
        state = graph.invoke(inputs, {"configurable": {"thread_id": graph_id}})
        answer = state.get("answer") or state["messages"][-1].content
        seen = "\\n".join(str(m.content) for m in state["messages"])
        print(json.dumps({"graph": graph_id, "answer": answer,
                          "retrieved": "Ed Wood" in seen and "Title:" in seen}), flush=True)
    heavy = [m for m in ("torch", "vllm", "transformers") if importlib.util.find_spec(m)]
    print(json.dumps({"heavy": heavy}))
    """
)


def _langgraph_config() -> dict[str, Any]:
    return json.loads((REPO / "langgraph.json").read_text())


def test_langgraph_json_installs_what_its_graphs_need_and_each_answers(
    tmp_path: Path, scripted_server: tuple[str, list[dict[str, Any]]]
) -> None:
    url, requests = scripted_server
    config = _langgraph_config()
    dockerfile = tmp_path / "Dockerfile"
    subprocess.run(
        [str(BIN / "langgraph"), "dockerfile", "-c", str(REPO / "langgraph.json"), str(dockerfile)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    text = dockerfile.read_text()
    added = re.findall(r"^ADD (\S+) /deps/(\S+)$", text, flags=re.M)
    assert added and all(source == "." for source, _ in added), added  # this checkout only
    deps = tmp_path / "deps"
    deps.mkdir()
    for source, name in added:
        (deps / name).symlink_to(REPO / source, target_is_directory=True)

    venv = tmp_path / "venv"
    if (BIN / "uv").is_file():  # seconds; `python -m venv` installs pip first
        make = [str(BIN / "uv"), "venv", "-q", "--python", sys.executable, str(venv)]
    else:
        make = [sys.executable, "-m", "venv", str(venv)]
    subprocess.run(make, check=True, timeout=300)
    python = venv / "bin" / "python"
    install = shlex.join(_installer(python))
    commands = dockerfile_installs(text, deps, install)
    # The encoder weights (dockerfile_lines), the PyPI requirements, the checkout itself.
    assert len(commands) == 3, commands
    work = tmp_path / "work"
    work.mkdir()
    for command in commands:
        done = subprocess.run(
            ["sh", "-c", command], cwd=work, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (command, done.stderr[-3000:])
    # A requirement the shell read as a redirection ('langchain>=1' writes a file '=1').
    assert list(work.iterdir()) == [], sorted(p.name for p in work.iterdir())

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LANGGRAPH_PARALLEL_", "OPENAI_", "VIRTUAL_ENV"))
    }
    env.update(
        OPENAI_BASE_URL=url,
        LANGGRAPH_PARALLEL_CACHE=str(tmp_path / "cache"),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    ran = subprocess.run(
        [str(python), "-c", RUN_GRAPHS, str(REPO), QUESTION],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    rows = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    answers = {row["graph"]: row for row in rows if "graph" in row}
    assert set(answers) == set(config["graphs"]), ran.stdout
    for graph_id, row in answers.items():
        assert row["answer"].strip() == "yes", (graph_id, row)
        assert row["retrieved"], (graph_id, row)  # the bundled corpus was searched
    assert rows[-1] == {"heavy": []}, rows[-1]  # no engine, torch or transformers
    served = {request["model"] for request in requests}
    assert served == {"smollm2-parallel", "smollm2-sequential"}, served  # each graph's default

    # Without a served model and without the engine, loading a graph says what to set.
    del env["OPENAI_BASE_URL"]
    load = "import runpy, sys; runpy.run_path(sys.argv[1])"
    bare = subprocess.run(
        [str(python), "-c", load, str(REPO / "graphs" / "parallel_search.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work,
        env=env,
    )
    assert bare.returncode != 0 and "OPENAI_BASE_URL" in bare.stderr, bare.stderr[-3000:]
