"""`langgraph dev` serves every graph in langgraph.json, draws them, and runs a thread to the end.

The test starts `.venv/bin/langgraph dev --no-browser --no-reload` on a free 127.0.0.1 port in
its own process group, talks to it over HTTP only (as Studio and the SDK do), and stops the whole
group by pid at the end. The served graphs use the real embedded model on the in-process engine
and real FAISS search over the first 300 corpus paragraphs (LANGGRAPH_PARALLEL_INDEX_LIMIT).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from langgraph_parallel.models.engine import ENGINE_ENV, env_engine_kwargs
from langgraph_parallel.models.server import stop_server
from langgraph_parallel.parallel_muse.agent_nodes import TRAJECTORY_MESSAGE as TRAJECTORY
from tests.servers import free_port, tail, wait_for_http

pytestmark = [pytest.mark.integration, pytest.mark.engine]

REPO = Path(__file__).resolve().parents[2]
GRAPHS = json.loads((REPO / "langgraph.json").read_text())["graphs"]
SEARCH_NODES = {"think", "fan_out", "search", "observe", "answer"}
SEARCH_EDGES = {("fan_out", "search"), ("search", "observe"), ("observe", "think")}
# create_agent's loop: the model calls the tools node, which calls the model again.
AGENT_NODES = {"model", "tools"}
AGENT_EDGES = {("model", "tools"), ("tools", "model")}
# ParallelMuse over the loop or over an agent: one graph, each rollout a run of the agent.
MUSE_NODES = {"router", "rollout", "report", "aggregate"}
MUSE_EDGES = {
    ("__start__", "router"),
    ("router", "rollout"),
    ("rollout", "router"),
    ("router", "report"),
    ("report", "aggregate"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("langgraph_dev")
    log = str(root / "server.log")
    port = free_port()
    env = {
        **os.environ,
        "LANGGRAPH_PARALLEL_INDEX_LIMIT": "300",
        # A small KV cache: this engine shares the machine with the other tests' engines (over
        # the session's settings: --engine-dtype puts a dtype there).
        ENGINE_ENV: json.dumps({**env_engine_kwargs(), "kv_cache_memory_bytes": 512 << 20}),
        "LANGGRAPH_PARALLEL_SEARCH": "faiss",
        # One engine for all the graphs (each would otherwise start its default policy's).
        "LANGGRAPH_PARALLEL_MODEL": "smollm2-parallel",
        "HF_HUB_OFFLINE": "1",
        "VLLM_LOGGING_LEVEL": "WARNING",
    }
    env.pop("OPENAI_BASE_URL", None)
    command = [
        str(REPO / ".venv" / "bin" / "langgraph"),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        "langgraph.json",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        start = time.monotonic()
        wait_for_http(f"http://127.0.0.1:{port}/ok", proc, timeout=180, log=log)
        print(f"langgraph dev up in {time.monotonic() - start:.1f} s")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            yield client
    finally:
        stop_server(proc)
        print(tail(log, 10))
    assert proc.poll() is not None


def assistants(client: httpx.Client) -> dict[str, dict[str, Any]]:
    found = client.post("/assistants/search", json={"limit": 100}).raise_for_status().json()
    return {a["graph_id"]: a for a in found}


def test_every_graph_is_served_and_drawn(server: httpx.Client) -> None:
    served = assistants(server)
    assert set(served) == set(GRAPHS)
    for graph_id, assistant in served.items():
        drawing = server.get(
            f"/assistants/{assistant['assistant_id']}/graph", params={"xray": "true"}
        )
        drawing = drawing.raise_for_status().json()
        nodes = {n["id"] for n in drawing["nodes"]}
        edges = {(e["source"], e["target"]) for e in drawing["edges"]}
        want_nodes, want_edges = {
            "parallel_muse": (MUSE_NODES, MUSE_EDGES),
            "parallel_search_agent": (AGENT_NODES, AGENT_EDGES),
            "parallel_muse_agent": (MUSE_NODES, MUSE_EDGES),
        }.get(graph_id, (SEARCH_NODES, SEARCH_EDGES))
        assert want_nodes <= nodes, (graph_id, nodes)
        assert want_edges <= edges, (graph_id, edges)
        conditional = {(e["source"], e["target"]) for e in drawing["edges"] if e.get("conditional")}
        if graph_id in ("parallel_search", "sequential_search"):
            # Send fan-out and Command routes are conditional edges
            assert {("fan_out", "search"), ("think", "fan_out"), ("think", "answer")} <= conditional


# Runtime context per graph (SearchContext / MuseContext fields): keep real-engine runs short.
RUN_CONTEXT = {
    "parallel_search": {"max_turns": 2, "max_tokens": 96},
    "sequential_search": {"max_turns": 2, "max_tokens": 96},
    "parallel_muse": {"budget": 2, "max_turns": 2, "max_tokens": 64, "report_max_tokens": 32},
    # The agent bounds its own searches (its middleware); the wrapper's settings are these.
    # Branching from step 0: a policy that answers after one search has no later step to fork
    # (it would get a fresh rollout, not the fork this test is about).
    "parallel_muse_agent": {"budget": 2, "report_max_tokens": 32, "min_branch_step": 0},
}


TAGS = ("<think>", "</think>", "<search>", "<answer>", "<information>")


def chat_stream(
    client: Any, thread_id: str, graph_id: str, content: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ask ``content`` on the thread as Agent Chat UI does; return the streamed messages and
    the thread's chat after the run."""
    run: dict[str, Any] = {"input": {"messages": [{"role": "user", "content": content}]}}
    if graph_id != "parallel_search_agent":  # create_agent bounds its own searches
        run["context"] = RUN_CONTEXT[graph_id]
    streamed = []
    for part in client.runs.stream(thread_id, graph_id, stream_mode="messages-tuple", **run):
        assert part.event != "error", part.data
        if part.event == "messages":
            message, metadata = part.data
            streamed.append({**message, "node": metadata.get("langgraph_node")})
    chat = client.threads.get_state(thread_id)["values"]["messages"]
    return streamed, chat


def assert_chat(chat: list[dict[str, Any]], question: str, *, searched: bool = True) -> None:
    """The chat view: the question, ``search`` calls answered by their tool messages, an answer."""
    assert chat[0]["type"] == "human" and chat[0]["content"] == question
    calls = {}
    for message in chat:
        if message["type"] == "ai":
            for call in message.get("tool_calls") or []:
                assert call["name"] == "search" and list(call["args"]) == ["query_list"], call
                calls[call["id"]] = call
        if message["type"] == "tool":
            assert message["tool_call_id"] in calls, message
    assert calls or not searched, "no search step in the chat"
    assert chat[-1]["type"] == "ai" and not chat[-1].get("tool_calls")


def assert_run(values: dict[str, Any], graph_id: str) -> None:
    """The thread's state after the run: what each graph id's run must have done."""
    if graph_id == "parallel_search_agent":
        # The middleware's counters; the last message is the policy's answer.
        assert values["counters"]["llm_calls"] > 0 and values["counters"]["prompt_tokens"] > 0
        assert values["counters"]["searches"] <= 4
        return
    assert values.get("answer") or values.get("stop_reason")
    assert not str(values.get("stop_reason")).startswith("model_error"), values["stop_reason"]
    assert values["counters"]["llm_calls"] > 0 and values["counters"]["prompt_tokens"] > 0
    if graph_id == "parallel_muse_agent":
        # One run of the agent and one fork of it, both on the engine, joined.
        assert [t["parent"] for t in values["trajectories"]] == [None, "t0"]
    elif graph_id == "parallel_muse":
        # The context reached the nodes: two trajectories, each reported (extracted: the
        # embedded model is prompted raw, report_style="auto"), then joined by the vote that
        # join="auto" gives a raw-prompt policy, with no analyst call.
        assert len(values["trajectories"]) == 2 == len(values["reports"])
        assert "report_calls" not in values["counters"]
        assert values["aggregation"]["join"] == "majority"
        assert "aggregate_calls" not in values["counters"]
    else:
        assert values["transcript"][0]["type"] == "human"  # the transcript is in the thread state
        assert values["counters"]["turns"] <= 2


def assert_live(streamed: list[dict[str, Any]], values: dict[str, Any], graph_id: str) -> None:
    """The fan-out and the forks reach the client as they happen, each placed in its branch."""
    if graph_id in ("parallel_search", "sequential_search"):
        # Each sub-query's result is streamed by its own search branch as it finishes (or by
        # fan_out, for one it does not search again), under its call, with its branch.
        results = [m for m in streamed if m["type"] == "tool"]
        assert results and all(m["node"] in ("search", "fan_out") for m in results), results
        assert all(m["artifact"]["branch"].count(".") == 1 for m in results)
    if graph_id in ("parallel_muse", "parallel_muse_agent"):
        # Each trajectory as it finished, from the rollout node: where it came from, its end.
        shown = [m for m in streamed if m.get("name") == TRAJECTORY]
        assert [m["node"] for m in shown] == ["rollout"] * len(values["trajectories"])
        fields = {m["response_metadata"]["trajectory"]["id"]: m for m in shown}
        for t in values["trajectories"]:
            said = fields[t["id"]]["response_metadata"]["trajectory"]
            assert (said["parent"], said["branch_step"], said["answer"]) == (
                t["parent"],
                t["branch_step"],
                t["answer"],
            )


@pytest.mark.parametrize("graph_id", sorted(GRAPHS))
def test_every_graph_chats_through_the_official_client(server: httpx.Client, graph_id: str) -> None:
    """langgraph_sdk, a thread, a run streamed in messages-tuple mode: what Agent Chat UI does.

    One run a graph id covers the chat (input, stream, thread state), the run's own outcome,
    and the live branches: each run costs engine minutes on the CI machine.
    """
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=str(server.base_url), timeout=900)
    thread = client.threads.create()
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    start = time.monotonic()
    streamed, chat = chat_stream(client, thread["thread_id"], graph_id, question)
    print(f"{graph_id}: {len(streamed)} streamed messages in {time.monotonic() - start:.1f} s")
    print(json.dumps([{k: m.get(k) for k in ("type", "content", "tool_calls")} for m in chat]))
    print(json.dumps([{k: m.get(k) for k in ("node", "type", "content")} for m in streamed]))
    state = client.threads.get_state(thread["thread_id"])
    assert state["next"] == []  # nothing left to run
    values = cast(dict[str, Any], state["values"])
    assert_run(values, graph_id)
    assert_chat([m for m in chat if m.get("name") != TRAJECTORY], question)
    # What the stream carried is the chat, never the model's prompt or its tagged text.
    assert streamed
    for message in streamed:
        text = json.dumps(message.get("content"))
        assert not any(tag in text for tag in TAGS) or message["type"] == "tool", message
        assert "Answer each question" not in text, message  # the few-shot prompt's opening
    assert_live(streamed, values, graph_id)
    if graph_id != "parallel_search":
        return
    # A second user message on the thread asks a new question there; the chat keeps both.
    again = "Who directed Ed Wood?"
    _, chat2 = chat_stream(client, thread["thread_id"], graph_id, again)
    assert [m["id"] for m in chat2[: len(chat)]] == [m["id"] for m in chat]
    assert_chat(chat2[len(chat) :], again, searched=False)
    values = cast(dict[str, Any], client.threads.get_state(thread["thread_id"])["values"])
    assert values["question"] == again and again in values["transcript"][0]["content"]
    assert question not in values["transcript"][0]["content"]
