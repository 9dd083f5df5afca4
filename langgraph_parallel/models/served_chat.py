"""``ChatVLLMServer``: ``ChatVLLM``'s twin over a running vLLM OpenAI-compatible server.

The trained policies are raw-prompt models (one document the model continues), which a chat
client cannot send: ``ChatOpenAI`` always goes through ``/v1/chat/completions`` and the chat
template. This client sends ``raw`` prompts to ``/v1/completions`` and ``chat`` prompts to
``/v1/chat/completions``, rendered exactly as :class:`~langgraph_parallel.models.vllm_chat.ChatVLLM`
renders them (:mod:`~langgraph_parallel.models.replies`), with the action grammar as vLLM's
``structured_outputs`` regex, and returns the same reply: text with its stop string, token
logprobs in the chat shape, and usage with the server's cached prompt tokens (the server needs
``--enable-prompt-tokens-details``, which ``langgraph-parallel serve`` passes). So a graph runs
the same on ``langgraph-parallel serve`` as in process, and many processes share one engine;
``bind_tools`` works as ``ChatVLLM``'s does (:mod:`~langgraph_parallel.dialect.tool_calls`).
:func:`warm_up` sends a new server, through this client, the requests whose first use is slow.

Written on the ``openai`` SDK (retries, timeouts, connection pooling) rather than on
``ChatOpenAI``, whose chat-only request shape is the thing that does not fit.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field, PrivateAttr, SecretStr

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.replies import VLLMChatSettings, chat_turns, generation, raw_text
from langgraph_parallel.models.served import API_KEY_ENV, client_api_key, is_loopback
from langgraph_parallel.models.special_tokens import SpecialTokens, served_special_tokens

__all__ = [
    "API_KEY_ENV",
    "WARM_UP_QUESTION",
    "ChatVLLMServer",
    "client_api_key",
    "prefix_key",
    "warm_up",
]


def _api_key() -> SecretStr:
    return SecretStr(client_api_key())


class ChatVLLMServer(VLLMChatSettings):
    r"""Chat model over a vLLM server, prompting and replying exactly as ``ChatVLLM`` does.

    The prompt style and raw prompt of the served model are read from its name as
    ``langgraph-parallel serve --model NAME`` serves it (an embedded name or a local folder);
    set ``prompt_style``/``raw_prompt`` for a model this machine does not have.

    Example:
        >>> llm = ChatVLLMServer(base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
        >>> llm.invoke("Question: who wrote Hamlet?\\n").usage_metadata  # doctest: +SKIP
    """

    base_url: str
    """The server's OpenAI address, ending in ``/v1``."""
    api_key: SecretStr = Field(default_factory=_api_key)
    """``LANGGRAPH_PARALLEL_API_KEY``, else ``OPENAI_API_KEY``, by default (vLLM checks it only
    when started with a key: ``langgraph-parallel serve --api-key``)."""
    max_retries: int = 2
    """The ``openai`` client's own retries of a failed request (connection errors, 408/429/5xx),
    inside one model call; the graph's ``RetryPolicy`` retries whole calls after them."""
    connect_timeout: float | None = 10.0
    """Seconds to open a connection (``timeout`` bounds the whole request). A server that is
    down refuses at once; one that cannot be reached (a dropped SYN) then fails as a transient
    ``APITimeoutError`` the graph retries, instead of holding the call for ``timeout``."""

    routing_header: str | None = "X-Prefix-Key"
    """A header sent with every request, holding a digest of the conversation's first user
    message (:func:`prefix_key`): every call of one question, and every fork of a ParallelMuse
    question, carries the same value. A router that hashes on it (nginx ``hash
    $http_x_prefix_key consistent``, HAProxy ``balance hdr(X-Prefix-Key)``) sends them to the
    replica whose prefix cache holds their prompt; a round-robin balancer spreads them over
    replicas that do not (docs/guides/serving.md). ``None``: no header."""

    special_tokens: list[str] | None = None
    """The served tokenizer's special tokens, made inert in outside text (passages, tool
    results, questions) before it is sent (:mod:`~.special_tokens`). ``None``: read from the
    served model's tokenizer files on this machine (an embedded name or a folder, as ``serve``
    resolves it; a hub name from the Hugging Face cache); ``[]`` for none."""

    _client: Any = PrivateAttr(default=None)
    _async_clients: Any = PrivateAttr(default_factory=weakref.WeakKeyDictionary)
    _special: SpecialTokens | None = PrivateAttr(default=None)

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {**super()._identifying_params, "base_url": self.base_url}

    def _options(self, *, asynchronous: bool) -> dict[str, Any]:
        openai = _openai()
        options = {
            "base_url": self.base_url,
            "api_key": self.api_key.get_secret_value(),
            "timeout": openai.Timeout(self.timeout, connect=self.connect_timeout),
            "max_retries": self.max_retries,
        }
        if is_loopback(self.base_url):  # never through http_proxy: see served.open_url
            http = openai.DefaultAsyncHttpxClient if asynchronous else openai.DefaultHttpxClient
            options["http_client"] = http(trust_env=False)
        return options

    def _sync_client(self) -> Any:
        if self._client is None:
            self._client = _openai().OpenAI(**self._options(asynchronous=False))
        return self._client

    def _async_client(self) -> Any:
        # An async HTTP client's connections belong to the event loop that opened them.
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = self._async_clients[loop] = _openai().AsyncOpenAI(
                **self._options(asynchronous=True)
            )
        return client

    def special(self) -> SpecialTokens:
        """Return the served tokenizer's special tokens (:attr:`special_tokens`), read once.

        Raises:
            UserError: ``special_tokens`` is ``None`` and the tokenizer is not on this machine.
        """
        if self._special is None:
            if self.special_tokens is not None:
                self._special = SpecialTokens(self.special_tokens)
            else:
                self._special = served_special_tokens(self.model)
        return self._special

    def _request(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> tuple[Literal["chat", "raw"], dict[str, Any]]:
        """Return the endpoint kind and the request of one call (``ChatVLLM._params``' twin).

        The server tokenizes what it is sent, so outside text leaves here with the served
        tokenizer's special tokens made inert (:meth:`special`), as ``ChatVLLM`` renders it.
        """
        special = self.special()
        regex, options = self.sampling(stop, kwargs)
        schema = options.pop("json_schema")
        style = self.style
        # Logprobs are always asked for (top 0 when off): their length is each sample's token
        # count, which the usage block gives only summed over the samples.
        top = options.pop("top_logprobs")
        top = top if self.logprobs else 0
        request: dict[str, Any] = {"model": self.model, **options}
        if style == "raw":
            request.update(prompt=raw_text(messages, special), logprobs=top)
        else:
            request.update(messages=chat_turns(messages, special), logprobs=True, top_logprobs=top)
        # vLLM's own sampling options; anything else a caller passes goes along the same way.
        body: dict[str, Any] = {"include_stop_str_in_output": True, **kwargs}
        if schema:
            body["structured_outputs"] = {"json": schema}
        elif regex:
            body["structured_outputs"] = {"regex": regex}
        request["extra_body"] = body
        if self.routing_header:
            request["extra_headers"] = {self.routing_header: prefix_key(messages)}
        return style, {key: value for key, value in request.items() if value is not None}

    def _complete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        style, request = self._request(messages, stop, **kwargs)
        client = self._sync_client()
        endpoint = client.completions if style == "raw" else client.chat.completions
        return self._to_result(style, endpoint.create(**request))

    async def _acomplete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        if self._special is None:  # reads files (an embedded model converts once): off the loop
            await asyncio.to_thread(self.special)
        style, request = self._request(messages, stop, **kwargs)
        client = self._async_client()
        endpoint = client.completions if style == "raw" else client.chat.completions
        return self._to_result(style, await endpoint.create(**request))

    def _to_result(self, style: Literal["chat", "raw"], response: Any) -> ChatResult:
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", None) or 0)
        generations = []
        for i, choice in enumerate(response.choices):
            if style == "raw":
                text, tokens = choice.text, _completion_logprobs(choice.logprobs)
            else:
                text, tokens = choice.message.content or "", _chat_logprobs(choice.logprobs)
            if tokens is not None:
                count = len(tokens)
            else:  # a server without logprobs: the summed count, charged to the first sample
                count = int(usage.completion_tokens) if i == 0 else 0
            generations.append(
                generation(
                    text,
                    model=self.model,
                    finish_reason=choice.finish_reason,
                    stop_reason=getattr(choice, "stop_reason", None),
                    prompt_tokens=int(usage.prompt_tokens),
                    output_tokens=count,
                    cached_tokens=cached,
                    first=i == 0,
                    logprobs=tokens if self.logprobs else None,
                )
            )
        return ChatResult(generations=generations)


def prefix_key(messages: Sequence[BaseMessage]) -> str:
    """Return the routing key of a conversation: 16 hex digits of its first user message.

    The first user message holds the question (the raw policies' whole rules-and-question
    prompt; a chat's opening turn), so a question's calls share the key and different questions
    spread over the replicas; a system prompt common to every question would not.
    """
    import hashlib

    from langgraph_parallel.models.replies import message_text

    first = next((m for m in messages if m.type == "human"), messages[0] if messages else None)
    text = message_text(first) if first is not None else ""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise UserError(f"Install the client: {install_hint('openai')}.") from exc
    return openai


def _completion_logprobs(logprobs: Any) -> list[dict[str, Any]] | None:
    """Convert ``/v1/completions`` logprobs (parallel lists) to the chat ``content`` shape.

    Alternatives come as a token -> logprob mapping, so two token ids that decode to the same
    text appear once (the in-process engine lists both).
    """
    if logprobs is None or logprobs.tokens is None:
        return None
    tops = logprobs.top_logprobs or [None] * len(logprobs.tokens)
    return [
        {
            "token": token,
            "logprob": -math.inf if logprob is None else float(logprob),
            "top_logprobs": [
                {"token": text, "logprob": float(value)}
                for text, value in sorted((top or {}).items(), key=lambda kv: -kv[1])
            ],
        }
        for token, logprob, top in zip(logprobs.tokens, logprobs.token_logprobs, tops, strict=False)
    ]


def _chat_logprobs(logprobs: Any) -> list[dict[str, Any]] | None:
    """Keep token, logprob and alternatives of chat logprobs (the shape ``ChatVLLM`` returns)."""
    if logprobs is None or logprobs.content is None:
        return None
    return [
        {
            "token": item.token,
            "logprob": float(item.logprob),
            "top_logprobs": [
                {"token": alt.token, "logprob": float(alt.logprob)}
                for alt in item.top_logprobs or []
            ],
        }
        for item in logprobs.content
    ]


WARM_UP_QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"


def warm_up(base_url: str, model: str, *, api_key: str | None = None) -> float:
    """Send the requests whose first use is slow on a new server; return the seconds taken.

    On the 2-core CPU a fresh server took 1.3 s for its first request, 2.2 s more for the first
    with the action grammar (compiling it) and 2.0 s more for the first with top-16 logprobs;
    then 0.2-0.6 s for the same requests. One step of each action grammar with logprobs, as
    the agents send it (the model's dialect says which: ``warm_up_calls``), pays all three
    before the first user question does. ``api_key``: the
    server's (default :func:`client_api_key`).
    """
    from langgraph_parallel.models.dialect import tool_dialect

    begin = time.perf_counter()
    key = SecretStr(api_key or client_api_key())
    # The warm-up prompts are this package's own text: no outside text to make inert.
    client = ChatVLLMServer(
        base_url=base_url, model=model, max_tokens=16, api_key=key, special_tokens=[]
    )
    if client.style == "raw":
        for prompt, options in tool_dialect(client.dialect).warm_up_calls(
            WARM_UP_QUESTION, client.prompt_kind
        ):
            client.invoke(prompt, **options)
    else:
        client.invoke(WARM_UP_QUESTION)
    return time.perf_counter() - begin
