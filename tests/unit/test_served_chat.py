"""``ChatVLLMServer`` and ``find_server`` against a stub OpenAI-compatible server.

The stub records every request and answers in vLLM's shapes (completions logprobs as parallel
lists, chat logprobs as ``content``, ``prompt_tokens_details.cached_tokens``), so these tests
pin down what is sent (endpoint, prompt rendering, stop strings, the action regex) and how the
reply is read (text, per-sample token counts, logprobs, cached tokens). The real vLLM server is
in ``tests/integration/test_vllm_server.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.served import api_url, find_server, served_models
from langgraph_parallel.models.served_chat import ChatVLLMServer, warm_up
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.protocol import STOP_SEQUENCES, action_regex
from tests.fakes import CountingSearcher
from tests.local_http import JsonHandler, local_server

STEP = "<think> two people </think>\n<search> Ed Wood ## Scott Derrickson </search>"
ANSWER = "<think> both American </think>\n<answer> yes </answer>"


class Stub:
    """What the stub server saw and will say."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.texts = [STEP, ANSWER]
        self.models = ["smollm2-parallel"]
        self.headers: list[dict[str, str]] = []


def _tokens(text: str) -> list[str]:
    return [text[i : i + 4] for i in range(0, len(text), 4)]  # 4-character "tokens"


def _reply(stub: Stub, path: str, body: dict[str, Any]) -> dict[str, Any]:
    n = int(body.get("n") or 1)
    choices = []
    for i in range(n):
        text = stub.texts[min(len(stub.requests) - 1, len(stub.texts) - 1)] + "x" * i
        tokens = _tokens(text)
        if path.endswith("/chat/completions"):
            content = [
                {
                    "token": t,
                    "logprob": -0.5,
                    "bytes": None,
                    "top_logprobs": [
                        {"token": t, "logprob": -0.5, "bytes": None},
                        {"token": "?", "logprob": -2.0, "bytes": None},
                    ],
                }
                for t in tokens
            ]
            choices.append(
                {
                    "index": i,
                    "finish_reason": "stop",
                    "stop_reason": "</search>",
                    "message": {"role": "assistant", "content": text},
                    "logprobs": {"content": content},
                }
            )
        else:
            choices.append(
                {
                    "index": i,
                    "text": text,
                    "finish_reason": "stop",
                    "stop_reason": "</search>",
                    "logprobs": {
                        "tokens": tokens,
                        "token_logprobs": [-0.5] * len(tokens),
                        "top_logprobs": [{"?": -2.0, t: -0.5} for t in tokens],
                        "text_offset": [4 * j for j in range(len(tokens))],
                    },
                }
            )
    prompt = body.get("prompt") or json.dumps(body.get("messages"))
    usage = {
        "prompt_tokens": len(prompt) // 4,
        "completion_tokens": sum(len(_tokens(c.get("text") or "")) for c in choices) or 9,
        "total_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 32},
    }
    kind = "chat.completion" if "messages" in body else "text_completion"
    return {
        "id": "x",
        "object": kind,
        "created": 0,
        "model": body["model"],
        "choices": choices,
        "usage": usage,
    }


def stub_handler(state: Stub) -> type[BaseHTTPRequestHandler]:
    """The stub server's request handler, recording into and answering from ``state``."""

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": m} for m in state.models]})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/reset_prefix_cache":  # vLLM's dev-mode endpoint (serving runs)
                self.send_json({})
                return
            body = json.loads(raw)
            state.requests.append((self.path, body))
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.send_json(_reply(state, self.path, body))

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Stub, str]]:
    state = Stub()
    with local_server(stub_handler(state), monkeypatch) as url:
        yield state, url + "/v1"


def test_raw_models_get_the_concatenated_prompt_on_the_completions_endpoint(
    stub: tuple[Stub, str],
) -> None:
    state, url = stub
    model = ChatVLLMServer(base_url=url, model="smollm2-parallel", max_tokens=64)
    assert (model.style, model.prompt_kind) == ("raw", "rules")  # read from the shipped card
    messages = [
        HumanMessage("Q: who?\n"),
        AIMessage(STEP),
        ToolMessage("<information>", tool_call_id="1"),
    ]
    reply = model.invoke(messages, stop=list(STOP_SEQUENCES), regex=action_regex(True))
    path, body = state.requests[-1]
    assert path == "/v1/completions"
    assert body["prompt"] == "Q: who?\n" + STEP + "<information>"
    assert body["stop"] == list(STOP_SEQUENCES) and body["max_tokens"] == 64
    assert body["include_stop_str_in_output"] is True
    assert body["structured_outputs"] == {"regex": action_regex(True)}
    assert body["logprobs"] == 16 and body["temperature"] == 0.0
    # The reply reads as ChatVLLM's does.
    assert reply.content == STEP
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["output_tokens"] == len(_tokens(STEP))
    assert usage["input_token_details"]["cache_read"] == 32
    content = reply.response_metadata["logprobs"]["content"]
    assert [c["token"] for c in content] == _tokens(STEP)
    first = content[0]["top_logprobs"]
    assert [alt["logprob"] for alt in first] == [-0.5, -2.0]  # best first
    assert reply.response_metadata["stop_reason"] == "</search>"


def test_chat_models_get_chat_turns_and_options_pass_through(stub: tuple[Stub, str]) -> None:
    state, url = stub
    # A name this machine cannot resolve: its tokenizer's special tokens are passed in.
    model = ChatVLLMServer(base_url=url, model="some/hub-model", logprobs=False, special_tokens=[])
    assert model.style == "chat"
    messages = [HumanMessage("Q?"), AIMessage(STEP), ToolMessage("docs", tool_call_id="1")]
    reply = model.invoke(messages, min_tokens=2)
    path, body = state.requests[-1]
    assert path == "/v1/chat/completions"
    assert body["messages"] == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": STEP},
        {"role": "user", "content": "docs"},
    ]
    assert body["min_tokens"] == 2 and "structured_outputs" not in body
    # Logprobs off: not in the reply, but still asked for (top 0) to count each sample's tokens.
    assert body["logprobs"] is True and body["top_logprobs"] == 0
    assert "logprobs" not in reply.response_metadata
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == len(_tokens(STEP))


def test_samples_are_counted_apart_and_the_prompt_charged_once(stub: tuple[Stub, str]) -> None:
    _, url = stub
    model = ChatVLLMServer(base_url=url, model="smollm2-parallel")
    result = model.generate([[HumanMessage("Q: who?\n")]], n=3, temperature=1.0)
    usages = [g.message.usage_metadata for g in result.generations[0]]  # type: ignore[attr-defined]
    assert [u["output_tokens"] for u in usages] == [len(_tokens(STEP + "x" * i)) for i in range(3)]
    assert usages[0]["input_tokens"] > 0 and [u["input_tokens"] for u in usages[1:]] == [0, 0]
    assert [u["input_token_details"]["cache_read"] for u in usages] == [32, 0, 0]


def test_async_calls_send_the_same_request(stub: tuple[Stub, str]) -> None:
    state, url = stub
    model = ChatVLLMServer(base_url=url, model="smollm2-parallel", max_tokens=8)

    async def ask_twice() -> list[Any]:
        return list(await asyncio.gather(model.ainvoke("A"), model.ainvoke("B")))

    replies = asyncio.run(ask_twice())
    sync = model.invoke("C")
    assert sorted(body["prompt"] for _, body in state.requests) == ["A", "B", "C"]
    assert {json.dumps(sorted(b)) for _, b in state.requests} == {
        json.dumps(sorted(state.requests[-1][1]))
    }
    assert all(r.usage_metadata["output_tokens"] > 0 for r in [*replies, sync])


def test_parallel_search_runs_on_the_server_model_with_the_action_grammar(
    stub: tuple[Stub, str],
) -> None:
    state, url = stub
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(
        ChatVLLMServer(base_url=url, model="smollm2-parallel"), searcher
    )
    final = graph.invoke({"question": "Were Ed Wood and Scott Derrickson both American?"})
    assert final["answer"] == "yes" and sorted(searcher.queries) == ["Ed Wood", "Scott Derrickson"]
    bodies = [body for _, body in state.requests]
    # Constrained like the in-process engine: the trained policy's prompt, the action regex.
    assert all(b["structured_outputs"] == {"regex": action_regex(True)} for b in bodies)
    assert all(b["logprobs"] == 0 for b in bodies)  # no alternatives: nothing reads them
    assert bodies[1]["prompt"].startswith(bodies[0]["prompt"] + STEP)
    assert final["counters"]["cached_prompt_tokens"] == 64


def test_a_question_s_calls_carry_one_routing_key_and_another_question_another(
    stub: tuple[Stub, str],
) -> None:
    state, url = stub
    model = ChatVLLMServer(base_url=url, model="smollm2-parallel")
    graph = create_parallel_search_graph(model, CountingSearcher())
    keys = []
    for question in ("Were Ed Wood and Scott Derrickson both American?", "Is Paris in France?"):
        start = len(state.requests)
        graph.invoke({"question": question})
        keys.append({h.get("x-prefix-key") for h in state.headers[start:]})
    assert len(state.headers) >= 3 and len(state.headers[:2]) == 2  # the first asked twice
    assert all(len(k) == 1 and None not in k for k in keys)  # one key for each question's calls
    assert keys[0] != keys[1] and all(len(key) == 16 for k in keys for key in k)
    start = len(state.headers)
    quiet = ChatVLLMServer(base_url=url, model="smollm2-parallel", routing_header=None)
    create_parallel_search_graph(quiet, CountingSearcher()).invoke({"question": "Is Paris big?"})
    assert all("x-prefix-key" not in h for h in state.headers[start:])


def test_create_agent_runs_on_the_server_model_as_a_tool_calling_policy(
    stub: tuple[Stub, str],
) -> None:
    from langchain.agents import create_agent

    from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool

    state, url = stub
    searcher = CountingSearcher()
    agent = create_agent(
        ChatVLLMServer(base_url=url, model="smollm2-parallel"),
        tools=[parallel_search_tool(searcher)],
        middleware=[ParallelSearchMiddleware()],
    )
    final = agent.invoke(
        {"messages": [HumanMessage("Were Ed Wood and Scott Derrickson both American?")]}
    )
    step = final["messages"][1]
    assert step.tool_calls[0]["args"] == {"query_list": ["Ed Wood", "Scott Derrickson"]}
    assert step.additional_kwargs["reasoning_content"] == "two people"
    assert len(step.response_metadata["logprobs"]["content"]) == len(_tokens(STEP))
    assert searcher.batches == [["Ed Wood", "Scott Derrickson"]]
    assert final["messages"][-1].content == "yes"
    bodies = [body for _, body in state.requests]
    # The request a graph step makes: the policy's prompt, its stops and the action regex.
    assert all(b["structured_outputs"] == {"regex": action_regex(True)} for b in bodies)
    assert all(b["stop"] == list(STOP_SEQUENCES) for b in bodies)
    assert bodies[1]["prompt"].startswith(bodies[0]["prompt"] + STEP + "\n\n<information>[Ed Wood]")
    assert final["counters"]["cached_prompt_tokens"] == 64 and final["counters"]["llm_calls"] == 2


def test_find_server_uses_only_a_server_that_serves_the_model(stub: tuple[Stub, str]) -> None:
    state, url = stub
    root = url.removesuffix("/v1")
    assert api_url(root) == url and api_url(url + "/") == url
    assert served_models(root) == ["smollm2-parallel"]
    assert find_server("smollm2-parallel", root) == url
    assert find_server("smollm2-parallel", "none") is None
    with pytest.raises(UserError, match=r"serves smollm2-parallel, not 'smollm2'.*serve --model"):
        find_server("smollm2", root)
    state.models = []
    with pytest.raises(UserError, match="serves no model"):
        find_server("smollm2", root)


def test_find_server_without_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.servers import free_port

    down = f"http://127.0.0.1:{free_port()}"
    assert served_models(down) is None
    with pytest.raises(UserError, match=r"No model server answers at .*langgraph-parallel serve"):
        find_server("smollm2-parallel", down)
    # auto: the default address; nothing (or another model) there means in process.
    monkeypatch.setattr("langgraph_parallel.models.served.DEFAULT_SERVER", down + "/v1")
    assert find_server("smollm2-parallel", "auto") is None
    assert find_server("smollm2-parallel", None) is None


def test_warm_up_sends_a_step_of_each_action_grammar(stub: tuple[Stub, str]) -> None:
    state, url = stub
    assert warm_up(url, "smollm2-parallel") >= 0.0
    bodies = [body for path, body in state.requests if path == "/v1/completions"]
    assert [b["structured_outputs"]["regex"] for b in bodies] == [
        action_regex(True),
        action_regex(False),
    ]
    assert all(b["logprobs"] == 16 and b["stop"] == list(STOP_SEQUENCES) for b in bodies)
    state.requests.clear()
    warm_up(url, "some/hub-model")  # a chat model: one plain chat request
    assert [path for path, _ in state.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize("client", ["ChatVLLMServer", "ChatOpenAI"])
def test_a_question_waits_for_a_restarting_server_under_a_retry_deadline(
    monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    from langgraph_parallel.models.server import chat_openai_for_server
    from langgraph_parallel.retry import deadline_retry_policy
    from tests.servers import free_port

    def model(url: str) -> Any:
        # The clients' own retries are off: what waits for the server is the graph's policy.
        if client == "ChatOpenAI":
            return chat_openai_for_server(url, model="smollm2-parallel", max_retries=0)
        return ChatVLLMServer(base_url=url, model="smollm2-parallel", max_retries=0)

    question = {"question": "Were Ed Wood and Scott Derrickson both American?"}
    # Without retries a refused connection loses the question (nothing listens on this port).
    lost = create_parallel_search_graph(
        model(f"http://127.0.0.1:{free_port()}/v1"), CountingSearcher(), retry_policy=None
    ).invoke(question)
    assert lost["answer"] is None
    # APIConnectionError (openai) or its langchain-openai subclass OpenAIConnectionError
    assert lost["stop_reason"].startswith("model_error: ")
    assert lost["stop_reason"].endswith("ConnectionError: Connection error.")

    # The port refuses connections for a second (a server restarting), then answers.
    state, searcher = Stub(), CountingSearcher()
    policy = deadline_retry_policy(30.0, initial_interval=0.05, max_interval=0.2, jitter=False)
    with local_server(stub_handler(state), monkeypatch, start_after=1.0) as root:
        graph = create_parallel_search_graph(model(root + "/v1"), searcher, retry_policy=policy)
        final = graph.invoke(question)
    assert final["answer"] == "yes" and final["stop_reason"] == "answered"
    assert sorted(searcher.queries) == ["Ed Wood", "Scott Derrickson"]
    # The refused attempts never reached the server, and a retry is not a step.
    assert len(state.requests) == 2 and final["counters"]["llm_calls"] == 2


def test_bench_runs_its_graphs_on_a_server_under_a_retry_deadline(
    stub: tuple[Stub, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_parallel.apps.cli import main

    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))  # the index's
    state, url = stub
    question = {
        "id": "1",
        "question": "Were Ed Wood and Scott Derrickson both American?",
        "answer": "yes",
        "type": "comparison",
    }
    (tmp_path / "q.jsonl").write_text(json.dumps(question) + "\n")
    corpus = [{"title": t, "text": f"{t} was an American filmmaker."} for t in ("Ed Wood", "X")]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    argv = [
        "bench",
        "--dataset",
        str(tmp_path / "q.jsonl"),
        "--graphs",
        "parallel-search",
        "--out",
        str(tmp_path / "out"),
        "--model",
        "smollm2-parallel",
        "--server",
        url,
        "--retry-deadline",
        "30",
        "--corpus",
        str(tmp_path / "c.jsonl"),
        "--index",
        "bm25",
    ]
    assert main(argv) == 0
    assert "a server back within 22.5 s is waited for" in capsys.readouterr().err
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    assert [(r["answer"], r["stop_reason"]) for r in rows] == [("yes", "answered")]
    assert {path for path, _ in state.requests} == {"/v1/completions"}  # not in process
    assert f"--server {url} --retry-deadline 30" in (tmp_path / "out" / "report.md").read_text()


class _Crashing(BaseHTTPRequestHandler):
    """Reads a request and closes the connection without an answer, as a killed server does."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


def test_a_refused_or_dropped_connection_is_a_transient_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_parallel.errors import is_transient
    from tests.servers import free_port

    # The client's own retries off: the error must come out of one call, for the graph to retry.
    down = ChatVLLMServer(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(Exception) as refused:
        down.invoke("Question: who?\n")
    assert is_transient(refused.value), repr(refused.value)
    with local_server(_Crashing, monkeypatch) as root:
        crashing = ChatVLLMServer(base_url=root + "/v1", model="smollm2-parallel", max_retries=0)
        with pytest.raises(Exception) as dropped:
            crashing.invoke("Question: who?\n")
    assert is_transient(dropped.value), repr(dropped.value)


def test_the_client_bounds_the_connect_apart_from_the_request() -> None:
    model = ChatVLLMServer(base_url="http://127.0.0.1:1/v1", timeout=900.0)
    timeout = model._sync_client().timeout
    assert (timeout.connect, timeout.read) == (10.0, 900.0)


def test_the_serving_fault_run_graph_waits_for_a_restarting_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lab.experiments.serving.serving_fault import fault_graph

    state, searcher = Stub(), CountingSearcher()
    question = {"question": "Were Ed Wood and Scott Derrickson both American?"}
    with local_server(stub_handler(state), monkeypatch, start_after=1.0) as root:
        model = ChatVLLMServer(base_url=root + "/v1", model="smollm2-parallel", max_retries=0)
        final = fault_graph(model, searcher, 90.0).invoke(question)
    assert final["answer"] == "yes" and final["stop_reason"] == "answered"
    assert len(state.requests) == 2  # the refused attempts never reached it


def test_the_serving_experiment_runs_its_levels_probe_and_fault_run_on_a_stub_server(
    stub: tuple[Stub, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The experiment's glue, end to end: no vLLM, the stub stands in for the served engine."""
    import subprocess
    import sys

    from lab.base import Run, resolve_settings
    from lab.experiments.serving import serving
    from lab.experiments.serving.serving_render import render_serving
    from langgraph_parallel.models import server as servers
    from langgraph_parallel.retrieval import indexes

    _, url = stub
    started: list[subprocess.Popen[bytes]] = []

    def start_server(*_: Any, **__: Any) -> subprocess.Popen[bytes]:
        # A stand-in server process in its own process group, for the fault run to kill.
        code = "import time; time.sleep(120)"
        started.append(subprocess.Popen([sys.executable, "-c", code], start_new_session=True))
        return started[-1]

    monkeypatch.setattr(servers, "start_server", start_server)
    monkeypatch.setattr(serving, "free_port", lambda: int(url.split(":")[-1].split("/")[0]))
    monkeypatch.setattr(indexes, "corpus_index", lambda *_, **__: CountingSearcher())
    pairs = ["levels=1,4", "kill_after=2", "decode_tokens=4"]
    settings = resolve_settings(serving.EXPERIMENT, pairs)
    run = Run("serving", tmp_path / "out", 4, settings, "langgraph-parallel bench run serving")
    try:
        serving.EXPERIMENT.run(run)
    finally:
        for proc in started:
            servers.stop_server(proc)
    assert len(started) == 2 and started[0].returncode == -9  # killed, then started again
    result = json.loads((tmp_path / "out" / "serving.json").read_text())
    assert [lv["concurrency"] for lv in result["levels"]] == [1, 4]
    assert [p["concurrency"] for p in result["engine_throughput"]] == [1, 4]
    assert all("of_ceiling" in lv and lv["prompt_tokens_per_call"] > 0 for lv in result["levels"])
    # Each level's requests were recorded under their question and sent again, chain by chain.
    for level in result["levels"]:
        calls = sum(row["llm_calls"] for row in level["rows"])
        assert level["replay"]["questions"] == 4 and level["replay"]["requests"] == calls
        assert level["of_replay"] > 0
        cpu = {k: v for k, v in level.items() if k.endswith("_cpu_s")}
        assert cpu.keys() == {"client_cpu_s", "server_cpu_s"} and cpu["client_cpu_s"] > 0
        assert level["replay"]["server_cpu_s"] >= 0
    fault = result["fault"]
    assert fault["every_question_once"] is True and fault["missing"] == []
    assert fault["retry"]["deadline_s"] == 90.0 and fault["retry"]["max_attempts"] == 18
    assert {"in_flight", "others", "server_down_s", "lost"} <= fault.keys()
    assert all({"start_s", "end_s", "prompt_tokens"} <= row.keys() for row in fault["rows"])
    assert "90 s deadline (18 attempts)" in render_serving(tmp_path)


def test_this_machines_servers_are_reached_past_a_proxy(
    stub: tuple[Stub, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_parallel.models.served import is_loopback, open_url
    from langgraph_parallel.models.server import chat_openai_for_server
    from tests.servers import free_port

    state, url = stub
    # A proxy that refuses everything, and no no_proxy naming 127.0.0.1 (as behind many firewalls).
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
        monkeypatch.setenv(name.upper(), dead)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert served_models(url) == ["smollm2-parallel"]
    model = ChatVLLMServer(base_url=url, model="smollm2-parallel", max_retries=0)
    assert model.invoke("A").content and asyncio.run(model.ainvoke("B")).content
    openai_model = chat_openai_for_server(url, "smollm2-parallel", max_retries=0)
    assert openai_model.invoke("C").content
    assert sorted(body.get("prompt") or "chat" for _, body in state.requests) == ["A", "B", "chat"]
    # Another machine's address goes the environment's way (urllib's own opener and proxies).
    assert [is_loopback(u) for u in (url, "http://localhost:1", "http://[::1]:2")] == [True] * 3
    assert not is_loopback("http://example.com/v1") and not is_loopback("http://10.0.0.1/")
    opened: list[str] = []
    monkeypatch.setattr("urllib.request.urlopen", lambda request, timeout: opened.append(request))
    open_url("http://example.com/v1/models", timeout=5)
    open_url(url + "/models", timeout=5).close()
    assert opened == ["http://example.com/v1/models"]
