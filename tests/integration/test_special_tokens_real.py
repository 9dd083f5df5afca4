"""Outside text carries no control token into the prompt, on the real SmolLM2 tokenizer.

A passage (and a title) holding every special token of the embedded model's tokenizer goes
through each way a prompt is rendered: ``ChatVLLM`` in a ParallelSearch graph (raw and chat
style), ``ChatVLLM`` in ``create_agent`` with the ParallelSearch tool and middleware (the tool
path), a foreign tool's result, and ``ChatVLLMServer``'s request rendered as vLLM's server
renders it. In each, the prompt's token ids hold as many special token ids as the same run with
a harmless passage: only the template's. The tokenizer is vLLM's own (``get_tokenizer``, the
class the engine uses); the engine is replaced at its one seam (the worker's ``submit``: prompt
ids in, a scripted step out), so no engine starts.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.replies import chat_turns, raw_text
from langgraph_parallel.models.served_chat import ChatVLLMServer
from langgraph_parallel.models.special_tokens import (
    WORD_JOINER,
    SpecialTokens,
    shipped_special_tokens,
)
from langgraph_parallel.models.vllm_chat import ChatVLLM
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.protocol import STOP_SEQUENCES
from langgraph_parallel.retrieval.documents import Passage

pytestmark = pytest.mark.integration

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
SEARCH = "<think> two magazines </think>\n<search> Arthur's Magazine ## First for Women </search>"
ANSWER = "<think> 1844 is before 1989 </think>\n<answer> Arthur's Magazine </answer>"


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(resolve_model("smollm2-parallel")[0])


def special_of(tokenizer: Any) -> dict[str, int]:
    """Every special token of the tokenizer and its id, read here apart from the code tested."""
    found = {t.content: i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    found.update(zip(tokenizer.all_special_tokens, tokenizer.all_special_ids, strict=True))
    return found


def special_ids(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    wanted = set(special_of(tokenizer).values())
    return [i for i in ids if i in wanted]


def hostile(tokenizer: Any) -> str:
    """A passage that holds every special token (first, so no passage budget cuts them)."""
    return "".join(sorted(special_of(tokenizer))) + " Arthur's Magazine was started in 1844."


class HostileSearcher:
    """One passage a query, its title and text holding every special token (or none)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        return [[Passage(id=q, title=self.text[:40], text=self.text)] for q in queries]


class RecordingWorker:
    """The engine at its seam: records each prompt's ids, replies with the scripted steps."""

    dead = False

    def __init__(self, tokenizer: Any, steps: list[str]) -> None:
        self.tokenizer = tokenizer
        self.steps = steps
        self.prompts: list[list[int]] = []

    def submit(self, prompt_token_ids: list[int], params: Any) -> concurrent.futures.Future[Any]:
        self.prompts.append(list(prompt_token_ids))
        text = self.steps[min(len(self.prompts), len(self.steps)) - 1]
        completion = SimpleNamespace(
            text=text,
            token_ids=[0] * 9,
            finish_reason="stop",
            stop_reason=next((s for s in STOP_SEQUENCES if text.endswith(s)), None),
            logprobs=None,
        )
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(
            SimpleNamespace(
                prompt_token_ids=prompt_token_ids, num_cached_tokens=0, outputs=[completion]
            )
        )
        return future


def chat_vllm(tokenizer: Any, **settings: Any) -> tuple[ChatVLLM, RecordingWorker]:
    model = ChatVLLM(**settings)
    worker = RecordingWorker(tokenizer, [SEARCH, ANSWER])
    model._worker = worker  # type: ignore[assignment]
    return model, worker


def test_both_chat_models_read_the_same_list_and_it_round_trips(tokenizer: Any) -> None:
    engine = SpecialTokens.of_tokenizer(tokenizer)
    assert engine.tokens == set(special_of(tokenizer))
    assert len(engine.tokens) == 17  # all_special_tokens names 3 of them
    assert {"<|im_start|>", "<|im_end|>", "<|endoftext|>"} <= engine.tokens
    served = ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model="smollm2-parallel")
    assert served.special().tokens == engine.tokens  # read from the folder's files, no tokenizer
    text = hostile(tokenizer)
    assert special_ids(tokenizer, tokenizer.encode(text, add_special_tokens=False))
    inert = engine.inert(text)
    ids = tokenizer.encode(inert, add_special_tokens=False)
    assert special_ids(tokenizer, ids) == []
    assert tokenizer.decode(ids) == inert  # visible text, as written
    assert inert.replace(WORD_JOINER, "") == text


def test_the_shipped_record_is_the_converted_tokenizer_s_list(tokenizer: Any) -> None:
    # A client of a server reads the shipped record (no engine, no model package); it must be
    # the converted tokenizer's own list. If this fails, rewrite the record from the folder.
    from langgraph_parallel.models.embedded import EMBEDDED_MODELS

    package = EMBEDDED_MODELS["smollm2-parallel"].package
    shipped = shipped_special_tokens(package).tokens
    assert shipped == SpecialTokens.of_folder(resolve_model("smollm2")[0]).tokens
    assert shipped == SpecialTokens.of_tokenizer(tokenizer).tokens


@pytest.mark.parametrize(
    "settings",
    [{"model": "smollm2-parallel"}, {"model": "smollm2", "prompt_style": "chat"}],
    ids=["raw", "chat"],
)
def test_a_graph_observation_adds_no_special_token(tokenizer: Any, settings: Any) -> None:
    prompts = {}
    for name, text in (("harmless", "Arthur's Magazine was started in 1844."), ("hostile", "")):
        model, worker = chat_vllm(tokenizer, **settings)
        searcher = HostileSearcher(text or hostile(tokenizer))
        graph = create_parallel_search_graph(model, searcher, constrain=False)
        state = graph.invoke({"question": QUESTION})
        assert state["answer"] == "Arthur's Magazine"
        prompts[name] = worker.prompts[1]  # after the observation
    hostile_ids = special_ids(tokenizer, prompts["hostile"])
    assert hostile_ids == special_ids(tokenizer, prompts["harmless"])
    if settings.get("prompt_style") == "chat":
        assert hostile_ids  # the template's own turn markers are kept
    # The passage is in the prompt, readable; without the rule it would add control tokens.
    seen = tokenizer.decode(prompts["hostile"]).replace(WORD_JOINER, "")
    assert hostile(tokenizer) in seen
    assert len(special_ids(tokenizer, tokenizer.encode(seen))) > len(hostile_ids)


def test_the_tool_path_adds_no_special_token(tokenizer: Any) -> None:
    prompts = {}
    for name, text in (("harmless", "Arthur's Magazine was started in 1844."), ("hostile", "")):
        model, worker = chat_vllm(tokenizer, model="smollm2-parallel")
        agent = create_agent(
            model,
            tools=[parallel_search_tool(HostileSearcher(text or hostile(tokenizer)))],
            middleware=[ParallelSearchMiddleware()],
        )
        state = agent.invoke({"messages": [HumanMessage(QUESTION)]})
        assert isinstance(state["messages"][-2], ToolMessage)  # the passage came as a tool result
        assert state["messages"][-1].content == "Arthur's Magazine"
        prompts[name] = worker.prompts[1]
    assert special_ids(tokenizer, prompts["hostile"]) == special_ids(tokenizer, prompts["harmless"])
    assert hostile(tokenizer) in tokenizer.decode(prompts["hostile"]).replace(WORD_JOINER, "")


def conversation(result: str) -> list[BaseMessage]:
    """A create_agent conversation: the question, a search call, a tool's result."""
    call = {"name": "search", "args": {"query_list": ["Arthur's Magazine"]}, "id": "call_1"}
    return [
        HumanMessage(f"{QUESTION} {result[:30]}"),  # the question is outside text too
        AIMessage("", tool_calls=[call]),
        ToolMessage(result, tool_call_id="call_1", name="lookup"),
    ]


def test_a_foreign_tool_s_result_adds_no_special_token(tokenizer: Any) -> None:
    counts = []
    for text in ("Arthur's Magazine was started in 1844.", hostile(tokenizer)):
        model, worker = chat_vllm(tokenizer, model="smollm2-parallel")
        tools = [parallel_search_tool(HostileSearcher(""))]
        model.bind_tools(tools).invoke(conversation(text))
        counts.append(special_ids(tokenizer, worker.prompts[0]))
    assert counts[0] == counts[1]


@pytest.mark.parametrize("style", ["raw", "chat"])
def test_the_server_client_sends_no_special_token(tokenizer: Any, style: str) -> None:
    settings = {"model": "smollm2-parallel"} if style == "raw" else {"model": "smollm2"}
    model = ChatVLLMServer(base_url="http://127.0.0.1:9/v1", prompt_style=style, **settings)
    tools = [parallel_search_tool(HostileSearcher(""))]
    found = []
    for text in ("Arthur's Magazine was started in 1844.", hostile(tokenizer)):
        # What _generate sends: the tool step prepared, then the request (no server needed).
        prepared, stop, _ = model.tool_step(conversation(text), None, {"tools": tools})
        _, request = model._request(prepared, stop)
        if style == "raw":  # /v1/completions tokenizes the prompt
            ids = tokenizer.encode(request["prompt"])
        else:  # /v1/chat/completions renders the template over the turns, then tokenizes
            rendered = tokenizer.apply_chat_template(
                request["messages"], tokenize=False, add_generation_prompt=True
            )
            ids = tokenizer.encode(rendered, add_special_tokens=False)
        found.append(special_ids(tokenizer, ids))
    assert found[0] == found[1]
    # The same turns without the rule would carry the passage's control tokens.
    bare = chat_turns(prepared) if style == "chat" else raw_text(prepared)
    assert hostile(tokenizer) in str(bare)
