"""``ChatVLLM``: a LangChain chat model over the in-process vLLM engine.

It returns what ``ChatOpenAI(logprobs=True, top_logprobs=16)`` returns against a vLLM server, so
every node works with either: token logprobs in ``response_metadata["logprobs"]["content"]`` as
``{token, logprob, top_logprobs: [{token, logprob}]}``, and ``usage_metadata`` with input, output
and cached prompt tokens (``input_token_details["cache_read"]``, read from the engine's
``num_cached_tokens``, never estimated).
"""

from __future__ import annotations

import asyncio
import math
import queue
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from langgraph_parallel.models.boundary import context_ids
from langgraph_parallel.models.engine import engine_defaults, get_engine
from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.replies import VLLMChatSettings, chat_turns, generation, raw_text
from langgraph_parallel.models.special_tokens import SpecialTokens
from langgraph_parallel.models.worker import EngineWorker

__all__ = ["ChatVLLM"]


class ChatVLLM(VLLMChatSettings):
    r"""Chat model over an in-process ``vllm.LLM`` with prefix caching.

    One engine per (model, engine settings) is started per process on first use and shared by all
    instances. Concurrent calls are decoded together (see :mod:`~langgraph_parallel.models.engine`).

    Prompt styles: ``chat`` renders messages with the tokenizer's chat template; ``raw``
    concatenates the message contents into one document the model continues (few-shot
    completion). Consecutive calls of an agent then share a byte-identical prefix, which the
    prefix cache serves. In both, outside text (questions, passages, tool results: every message
    but the model's own steps) has the tokenizer's special tokens made inert
    (:mod:`~.special_tokens`).

    ``bind_tools([search_tool])`` makes it a tool-calling model for ``create_agent``: each step
    comes back as a ``search`` call or an answer (:mod:`~langgraph_parallel.dialect.tool_calls`).

    Example:
        >>> llm = ChatVLLM(model="smollm2", max_tokens=64)  # doctest: +SKIP
        >>> llm.invoke("Question: who wrote Hamlet?\\n").usage_metadata  # doctest: +SKIP
    """

    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    """``vllm.LLM`` settings over :func:`~.engine.engine_defaults`."""

    IN_PROCESS: ClassVar[bool] = True

    _worker: EngineWorker | None = PrivateAttr(default=None)
    _special: tuple[Any, SpecialTokens] | None = PrivateAttr(default=None)

    @property
    def worker(self) -> EngineWorker:
        """The shared engine worker, started on first access (and again if its engine died)."""
        if self._worker is None or self._worker.dead:
            path, _ = resolve_model(self.model)
            self._worker = self._start_engine(path)
        return self._worker

    def _start_engine(self, path: str) -> EngineWorker:
        """Return the engine for ``path`` (the process-wide worker; a benchmark may swap it)."""
        return get_engine(path, self.engine_kwargs)

    def reset_prefix_cache(self) -> None:
        """Empty the engine's prefix cache (benchmarks: no run reuses another's prompts).

        Raises:
            RuntimeError: Requests are running (the engine refuses while any is).
        """
        if not self.worker.reset_prefix_cache():
            raise RuntimeError("the engine refused to empty its prefix cache: requests running")

    def _declare(self) -> dict[str, Any]:
        # The engine's window, from the settings it will start with (no engine started here).
        window = {**engine_defaults(), **self.engine_kwargs}.get("max_model_len")
        return {**super()._declare(), "context_tokens": window}

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """Return the exact prompt tokens of ``messages``, as :meth:`render` gives the engine.

        ``tools`` are not rendered into the prompt (tool calls are decoded from the policy's own
        text), so they count nothing.
        """
        return len(self.render(messages))

    def render(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Return the prompt token ids the engine sees for ``messages``.

        Outside text (every message but the model's own steps) has the tokenizer's special
        tokens made inert (:mod:`~.special_tokens`), so the only control tokens in the prompt
        are the chat template's.
        """
        tokenizer = self.worker.tokenizer
        special = self._special_tokens(tokenizer)
        if self.style == "raw":
            return context_ids(tokenizer, raw_text(messages, special))
        text = tokenizer.apply_chat_template(
            chat_turns(messages, special), tokenize=False, add_generation_prompt=True
        )
        return list(tokenizer.encode(text, add_special_tokens=False))

    def _special_tokens(self, tokenizer: Any) -> SpecialTokens:
        # Read once per tokenizer (a restarted engine brings a new one).
        if self._special is None or self._special[0] is not tokenizer:
            self._special = (tokenizer, SpecialTokens.of_tokenizer(tokenizer))
        return self._special[1]

    def _params(self, stop: list[str] | None, **kwargs: Any) -> Any:
        from vllm import SamplingParams

        regex, options = self.sampling(stop, kwargs)
        options["include_stop_str_in_output"] = True
        top = options.pop("top_logprobs")
        options["logprobs"] = top if self.logprobs else None
        schema = options.pop("json_schema")
        if regex or schema:
            from vllm.sampling_params import StructuredOutputsParams

            guide = {"json": schema} if schema else {"regex": regex}
            options["structured_outputs"] = StructuredOutputsParams(**guide)
        options.update(kwargs)
        return SamplingParams(**options)

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        return self.worker.submit(self.render(messages), self._params(stop, **kwargs))

    def _complete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        future = self._submit(messages, stop, **kwargs)
        try:
            output = future.result(timeout=self.timeout)
        except TimeoutError:
            future.cancel()  # the engine aborts the request instead of finishing it for no one
            raise
        return self._to_result(output)

    async def _acomplete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        if self._worker is None or self._worker.dead:  # a start takes seconds: off the loop
            await asyncio.to_thread(lambda: self.worker)
        future = self._submit(messages, stop, **kwargs)
        output = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        return self._to_result(output)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Yield the reply's text as the engine decodes it; the last chunk carries the usage.

        A call with bound tools, or for several samples (``n``), yields its whole reply as
        one chunk: a tool call is known only once its step is complete.
        """
        if "tools" in kwargs or kwargs.get("n", self.n) != 1:
            yield _whole(self._generate(messages, stop, run_manager, **kwargs))
            return
        outputs: queue.Queue[Any] = queue.Queue()
        done = self.worker.stream(self.render(messages), self._params(stop, **kwargs), outputs.put)
        done.add_done_callback(lambda _: outputs.put(_END))
        state = _StreamState()
        try:
            while (output := outputs.get(timeout=self.timeout)) is not _END:
                if chunk := state.chunk(output):
                    if run_manager:
                        run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
        except queue.Empty:
            done.cancel()  # the engine aborts the request instead of finishing it for no one
            raise TimeoutError(f"no token for {self.timeout} s") from None
        done.result()  # an engine error ends the stream as it ends a call
        yield state.last(self)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """:meth:`_stream` on the caller's event loop (the tokens are handed to it)."""
        if "tools" in kwargs or kwargs.get("n", self.n) != 1:
            yield _whole(await self._agenerate(messages, stop, run_manager, **kwargs))
            return
        if self._worker is None or self._worker.dead:  # a start takes seconds: off the loop
            await asyncio.to_thread(lambda: self.worker)
        loop = asyncio.get_running_loop()
        outputs: asyncio.Queue[Any] = asyncio.Queue()

        def hand_over(output: Any) -> None:  # on the worker's thread: to this loop
            loop.call_soon_threadsafe(outputs.put_nowait, output)

        done = self.worker.stream(self.render(messages), self._params(stop, **kwargs), hand_over)
        done.add_done_callback(lambda _: loop.call_soon_threadsafe(outputs.put_nowait, _END))
        state = _StreamState()
        try:
            while (output := await asyncio.wait_for(outputs.get(), self.timeout)) is not _END:
                if chunk := state.chunk(output):
                    if run_manager:
                        await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                    yield chunk
        except TimeoutError:
            done.cancel()
            raise
        done.result()
        yield state.last(self)

    def _to_result(self, output: Any) -> ChatResult:
        prompt_tokens = len(output.prompt_token_ids or [])
        cached = int(output.num_cached_tokens or 0)
        return ChatResult(
            generations=[
                generation(
                    completion.text,
                    model=self.model,
                    finish_reason=completion.finish_reason,
                    stop_reason=completion.stop_reason,
                    prompt_tokens=prompt_tokens,
                    output_tokens=len(completion.token_ids),
                    cached_tokens=cached,
                    first=i == 0,
                    logprobs=None
                    if completion.logprobs is None
                    else _openai_logprobs(completion, self.worker),
                )
                for i, completion in enumerate(output.outputs)
            ]
        )


_END = object()
"""Put after a stream's last output."""


def _whole(result: ChatResult) -> ChatGenerationChunk:
    """Return a complete reply as one stream chunk."""
    message = result.generations[0].message
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content=message.content,
            tool_calls=getattr(message, "tool_calls", []),
            additional_kwargs=message.additional_kwargs,
            response_metadata=message.response_metadata,
            usage_metadata=getattr(message, "usage_metadata", None),
            id=message.id,
        )
    )


class _StreamState:
    """What a stream has seen: its prompt, cached and decoded token counts, how it ended."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.cached = 0
        self.tokens = 0
        self.finish_reason: str | None = None
        self.stop_reason: Any = None

    def chunk(self, output: Any) -> ChatGenerationChunk | None:
        """Return the new text of one delta output as a chunk (``None`` when it has none)."""
        if output.prompt_token_ids:
            self.prompt_tokens = len(output.prompt_token_ids)
        self.cached = int(output.num_cached_tokens or self.cached or 0)
        (completion,) = output.outputs
        self.tokens += len(completion.token_ids)
        self.finish_reason = completion.finish_reason or self.finish_reason
        self.stop_reason = completion.stop_reason or self.stop_reason
        if not completion.text:
            return None
        return ChatGenerationChunk(message=AIMessageChunk(content=completion.text))

    def last(self, model: ChatVLLM) -> ChatGenerationChunk:
        """Return the closing chunk: no text, the usage and how the reply ended."""
        final = generation(
            "",
            model=model.model,
            finish_reason=self.finish_reason,
            stop_reason=self.stop_reason,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.tokens,
            cached_tokens=self.cached,
            first=True,
            logprobs=None,
        ).message
        return ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                response_metadata=final.response_metadata,
                usage_metadata=getattr(final, "usage_metadata", None),
            )
        )


def _openai_logprobs(completion: Any, worker: EngineWorker) -> list[dict[str, Any]]:
    """Convert vLLM per-token logprob dicts into the OpenAI chat ``logprobs.content`` shape."""
    content = []
    for token_id, candidates in zip(completion.token_ids, completion.logprobs, strict=False):
        chosen = candidates.get(token_id)
        token = (chosen.decoded_token if chosen else None) or worker.tokenizer.decode([token_id])
        ranked = sorted(candidates.values(), key=lambda lp: lp.rank or math.inf)
        content.append(
            {
                "token": token,
                "logprob": float(chosen.logprob) if chosen else float("-inf"),
                "top_logprobs": [
                    {"token": lp.decoded_token or "", "logprob": float(lp.logprob)}
                    for lp in ranked
                    if lp.rank is not None and lp.rank >= 1
                ][: len(candidates)],
            }
        )
    return content
