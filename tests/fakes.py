"""Scripted fakes for unit tests: a chat model that replays outputs and a counting searcher."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from langgraph_parallel.retrieval.documents import Passage


class ScriptedChatModel(BaseChatModel):
    """Replays ``script`` one output per call (str or AIMessage), recording every prompt."""

    script: list[Any]
    usage: dict[str, int] = {"input_tokens": 10, "output_tokens": 5, "cache_read": 2}
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        return self._kwargs

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        with self._lock:
            index = len(self._calls)
            self._calls.append(list(messages))
            self._kwargs.append({"stop": stop, **kwargs})
        item = self.script[min(index, len(self.script) - 1)]
        if isinstance(item, Exception):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        message = message.model_copy(
            update={
                "usage_metadata": {
                    "input_tokens": self.usage["input_tokens"],
                    "output_tokens": self.usage["output_tokens"],
                    "total_tokens": self.usage["input_tokens"] + self.usage["output_tokens"],
                    "input_token_details": {"cache_read": self.usage["cache_read"]},
                }
            }
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class CountingSearcher:
    """Returns one passage per query titled after it; counts queries; can fail on demand."""

    def __init__(self, fail: Callable[[str], Exception | None] | None = None) -> None:
        self.queries: list[str] = []
        self.fail = fail
        self._lock = threading.Lock()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        with self._lock:
            self.queries.extend(queries)
        out = []
        for q in queries:
            error = self.fail(q) if self.fail else None
            if error is not None:
                raise error
            out.append([Passage(id=q, title=f"Title {q}", text=f"Text about {q}.")][:k])
        return out
