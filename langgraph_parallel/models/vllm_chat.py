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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

from langgraph_parallel.models.embedded import (
    DEFAULT_EMBEDDED,
)
from langgraph_parallel.models.engine import EngineWorker, get_engine
from langgraph_parallel.models.folders import folder_raw_prompt, resolve_model
from langgraph_parallel.prompts import RawPrompt

_ROLES = {AIMessage: "assistant", HumanMessage: "user", SystemMessage: "system"}


def message_text(message: BaseMessage) -> str:
    """Return a message's text: string content, or the text parts of a content list."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part if isinstance(part, str) else str(part.get("text", "")) for part in content)


class ChatVLLM(BaseChatModel):
    r"""Chat model over an in-process ``vllm.LLM`` with prefix caching.

    One engine per (model, engine settings) is started per process on first use and shared by all
    instances. Concurrent calls are decoded together (see :mod:`~langgraph_parallel.models.engine`).

    Prompt styles: ``chat`` renders messages with the tokenizer's chat template; ``raw``
    concatenates the message contents into one document the model continues (few-shot
    completion). Consecutive calls of an agent then share a byte-identical prefix, which the
    prefix cache serves.

    Example:
        >>> llm = ChatVLLM(model="smollm2", max_tokens=64)  # doctest: +SKIP
        >>> llm.invoke("Question: who wrote Hamlet?\\n").usage_metadata  # doctest: +SKIP
    """

    model: str = DEFAULT_EMBEDDED
    """Embedded model name (``smollm2-parallel``, ``smollm2-sequential``, ``smollm2``,
    ``gemma3``), a model or adapter folder, or a hub name."""
    prompt_style: Literal["chat", "raw"] | None = None
    """``None``: ``raw`` for embedded models, ``chat`` otherwise."""
    raw_prompt: RawPrompt | None = None
    """Raw-style prompt: ``few_shot`` demos or the ``rules`` alone; ``None``: the model card's
    choice (``rules`` for the trained policies), else ``few_shot``."""
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    n: int = 1
    seed: int | None = None
    stop: list[str] | None = None
    logprobs: bool = True
    top_logprobs: int = 16
    regex: str | None = None
    """Constrain every generation to this regular expression (vLLM structured outputs)."""
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    timeout: float | None = 900.0

    _worker: EngineWorker | None = PrivateAttr(default=None)
    _style: Literal["chat", "raw"] = PrivateAttr(default="chat")
    _raw_prompt: RawPrompt = PrivateAttr(default="few_shot")

    @property
    def _llm_type(self) -> str:
        return "vllm-in-process"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "top_p": self.top_p}

    @property
    def worker(self) -> EngineWorker:
        """The shared engine worker, started on first access."""
        if self._worker is None:
            path, style = resolve_model(self.model)
            self._style = self.prompt_style or style
            folder = Path(path)
            self._raw_prompt = self.raw_prompt or (
                folder_raw_prompt(folder) if folder.is_dir() else "few_shot"
            )
            self._worker = get_engine(path, self.engine_kwargs)
        return self._worker

    @property
    def style(self) -> Literal["chat", "raw"]:
        """The prompt style in effect."""
        _ = self.worker
        return self._style

    @property
    def prompt_kind(self) -> RawPrompt:
        """The raw-style prompt in effect (``rules`` for trained policies)."""
        _ = self.worker
        return self._raw_prompt

    def render(self, messages: Sequence[BaseMessage]) -> list[int]:
        """Return the prompt token ids the engine sees for ``messages``."""
        tokenizer = self.worker.tokenizer
        if self.style == "raw":
            return list(tokenizer.encode("".join(message_text(m) for m in messages)))
        turns = [
            {
                "role": "user" if isinstance(m, ToolMessage) else _ROLES.get(type(m), "user"),
                "content": message_text(m),
            }
            for m in messages
        ]
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        return list(tokenizer.encode(text, add_special_tokens=False))

    def _params(self, stop: list[str] | None, **kwargs: Any) -> Any:
        from vllm import SamplingParams

        regex = kwargs.pop("regex", self.regex)
        options: dict[str, Any] = {
            "n": kwargs.pop("n", self.n),
            "temperature": kwargs.pop("temperature", self.temperature),
            "top_p": kwargs.pop("top_p", self.top_p),
            "max_tokens": kwargs.pop("max_tokens", self.max_tokens),
            "seed": kwargs.pop("seed", self.seed),
            "stop": stop if stop is not None else self.stop,
            "include_stop_str_in_output": True,
            "logprobs": self.top_logprobs if self.logprobs else None,
        }
        if regex:
            from vllm.sampling_params import StructuredOutputsParams

            options["structured_outputs"] = StructuredOutputsParams(regex=regex)
        options.update(kwargs)
        return SamplingParams(**options)

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        return self.worker.submit(self.render(messages), self._params(stop, **kwargs))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        output = self._submit(messages, stop, **kwargs).result(timeout=self.timeout)
        return self._to_result(output)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        future = self._submit(messages, stop, **kwargs)
        output = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        return self._to_result(output)

    def _to_result(self, output: Any) -> ChatResult:
        prompt_tokens = len(output.prompt_token_ids or [])
        cached = int(output.num_cached_tokens or 0)
        generations = []
        for i, completion in enumerate(output.outputs):
            # The engine prefills once per request; charge the prompt to the first sample only so
            # sums over generations stay true.
            input_tokens = prompt_tokens if i == 0 else 0
            usage = UsageMetadata(
                input_tokens=input_tokens,
                output_tokens=len(completion.token_ids),
                total_tokens=input_tokens + len(completion.token_ids),
                input_token_details=InputTokenDetails(cache_read=cached if i == 0 else 0),
            )
            metadata: dict[str, Any] = {
                "model_name": self.model,
                "finish_reason": completion.finish_reason,
                "stop_reason": completion.stop_reason,
            }
            if completion.logprobs is not None:
                metadata["logprobs"] = {"content": _openai_logprobs(completion, self.worker)}
            message = AIMessage(
                content=completion.text, response_metadata=metadata, usage_metadata=usage
            )
            generations.append(ChatGeneration(message=message))
        return ChatResult(generations=generations)


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
