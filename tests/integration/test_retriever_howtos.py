"""The retriever how-tos (docs/guides/retrievers.md) against the real integrations.

A LangChain FAISS vector store, and langchain-elasticsearch's ``ElasticsearchRetriever`` with
the real Elasticsearch client talking to a local stub of the ``_search`` endpoint: the graph
searches both as the guide shows, with a scripted policy.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from langchain_core.documents import Document

from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from tests.fakes import ScriptedChatModel
from tests.local_http import local_server
from tests.unit.test_retrieval import HashedBagOfWords

pytestmark = pytest.mark.integration

PAGES = {
    "Paris": "Paris is the capital of France.",
    "Jupiter": "Jupiter is the largest planet of the solar system.",
    "Ed Wood": "Ed Wood was an American filmmaker.",
}
SCRIPT = [
    "<think>t</think><search> capital of France ## largest planet </search>",
    "<think>t</think><answer> Paris </answer>",
]


def observation(state: Mapping[str, Any]) -> str:
    return str(state["transcript"][2].content)


def test_a_langchain_faiss_vector_store_is_searched_as_the_guide_shows() -> None:
    pytest.importorskip("faiss")
    from langchain_community.vectorstores import FAISS

    docs = [Document(text, metadata={"title": title}) for title, text in PAGES.items()]
    store = FAISS.from_documents(docs, HashedBagOfWords())
    model = ScriptedChatModel(script=list(SCRIPT))
    graph = create_parallel_search_graph(model, store, top_k=2, prompt_style="raw")
    state = graph.invoke({"question": "Which city and which planet?"})
    assert state["answer"] == "Paris"
    seen = observation(state)
    assert "(Title: Paris) Paris is the capital" in seen and "(Title: Jupiter)" in seen
    # top_k reaches the store's k: two passages a sub-query, four in all.
    assert seen.count("(Title: ") == 4


class ElasticStub:
    """Answers ``POST /<index>/_search`` with a match over PAGES, as Elasticsearch 8 would."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length) or b"{}") if length else {}
        if request.command == "GET":  # the client's product check
            self.send(request, {"version": {"number": "8.19.0"}})
            return
        with self.lock:
            self.requests.append((request.path, body))
        words = set(body["query"]["match"]["text"].lower().split())
        ranked = sorted(
            PAGES.items(), key=lambda page: -len(words & set(page[1].lower().rstrip(".").split()))
        )
        hits = [
            {
                "_index": "wiki",
                "_id": title,
                "_score": 1.0,
                "_source": {"title": title, "text": text},
            }
            for title, text in ranked[: body["size"]]
        ]
        self.send(request, {"took": 1, "timed_out": False, "hits": {"hits": hits}})

    @staticmethod
    def send(request: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("X-Elastic-Product", "Elasticsearch")  # the client checks it
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


def test_an_elasticsearch_retriever_is_searched_as_the_guide_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("langchain_elasticsearch")
    from langchain_elasticsearch import ElasticsearchRetriever

    stub = ElasticStub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            stub.handle(self)

        def do_GET(self) -> None:
            stub.handle(self)

        def log_message(self, *args: Any) -> None:
            pass

    def page(hit: Mapping[str, Any]) -> Document:
        source = hit["_source"]
        return Document(source["text"], metadata={"title": source["title"], "id": hit["_id"]})

    with local_server(Handler, monkeypatch) as url:
        retriever = ElasticsearchRetriever(
            index_name="wiki",
            body_func=lambda query: {"query": {"match": {"text": query}}, "size": 2},
            document_mapper=page,
            es_url=url,
        )
        model = ScriptedChatModel(script=list(SCRIPT))
        graph = create_parallel_search_graph(model, retriever, top_k=1, prompt_style="raw")
        state = graph.invoke({"question": "Which city and which planet?"})
    assert state["answer"] == "Paris"
    searches = sorted(body["query"]["match"]["text"] for path, body in stub.requests)
    assert searches == ["capital of France", "largest planet"]  # one request a sub-query
    assert {path for path, _ in stub.requests} == {"/wiki/_search"}
    seen = observation(state)
    # The retriever returned its size (2); the graph kept top_k (1) of each, titles mapped.
    assert "(Title: Paris) Paris is the capital" in seen and "(Title: Jupiter)" in seen
    assert seen.count("(Title: ") == 2
