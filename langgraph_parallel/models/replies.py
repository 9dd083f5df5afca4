"""What the chat models over vLLM share: settings, message rendering, and the reply.

``ChatVLLM`` (in process) and ``ChatVLLMServer`` (over HTTP) take the same settings
(:class:`VLLMChatSettings`), render messages the same way (outside text with the model's special
tokens made inert, :mod:`~.special_tokens`) and return the same ``AIMessage``:
text, ``finish_reason``/``stop_reason``, token logprobs in the OpenAI chat shape and
``usage_metadata`` with cached prompt tokens. Keeping that here makes the two interchangeable by
construction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.dialect import DEFAULT_DIALECT, ToolDialect, ToolReader, tool_dialect
from langgraph_parallel.models.embedded import DEFAULT_EMBEDDED
from langgraph_parallel.models.folders import RawPrompt, model_card, served_prompt
from langgraph_parallel.models.sampling import ConfigurableSampling
from langgraph_parallel.models.special_tokens import SpecialTokens, outside_text

__all__ = [
    "VLLMChatSettings",
    "chat_turns",
    "generation",
    "message_text",
    "prompt_text",
    "raw_text",
]


class VLLMChatSettings(ConfigurableSampling):
    """The settings of the chat models over vLLM, and how a call's options are read from them.

    A run's config may set ``temperature``, ``top_p`` and ``seed``
    (:class:`~.sampling.ConfigurableSampling`); options the call passes win over those, and
    those over the fields here.
    """

    model: str = DEFAULT_EMBEDDED
    """Embedded model name (``smollm2-parallel``, ``smollm2-sequential``, ``smollm2``,
    ``gemma3``), a model or adapter folder, or a hub name; for a server, the name it serves."""
    prompt_style: Literal["chat", "raw"] | None = None
    """``None``: ``raw`` for embedded models and folders whose card says so, else ``chat``."""
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
    dialect: str | ToolDialect = DEFAULT_DIALECT
    """How bound tools become the policy's steps and its steps tool calls: a
    :class:`~.dialect.ToolDialect` object, or its name (the package's own ``search-r1``, or
    one registered under the ``langgraph_parallel.dialects`` entry points; :mod:`~.dialect`)."""
    timeout: float | None = 900.0

    IN_PROCESS: ClassVar[bool] = False
    """Whether the model runs on an engine in this process (``ChatVLLM``)."""

    @property
    def _llm_type(self) -> str:
        return "vllm-in-process" if self.IN_PROCESS else "vllm-server"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # What LangChain's cache key and traces tell models apart by: the model and its sampling.
        return {"model": self.model, "temperature": self.temperature, "top_p": self.top_p}

    @property
    def passage_sentences(self) -> Any:
        """The observation budget the model's card declares (``None``: whole passages).

        Read from the card of the name (:func:`~.folders.model_card`), never by loading the
        model: a graph factory asks while it is built, before any engine starts. The graph
        checks the value (:func:`~langgraph_parallel.agent.step.passage_budget`).
        """
        return model_card(self.model).get("passage_sentences")

    _card_prompt: tuple[Literal["chat", "raw"], RawPrompt] | None = PrivateAttr(default=None)
    _declared: dict[str, Any] | None = PrivateAttr(default=None)

    def _carded(self) -> tuple[Literal["chat", "raw"], RawPrompt]:
        # Read once: every step asks for the style, and the answer is on disk (the model card).
        if self._card_prompt is None:
            self._card_prompt = served_prompt(self.model)
        return self._card_prompt

    @property
    def style(self) -> Literal["chat", "raw"]:
        """The prompt style in effect: the field, else the model card's (no engine started)."""
        return self.prompt_style or self._carded()[0]

    @property
    def prompt_kind(self) -> RawPrompt:
        """The raw-style prompt in effect: the field, else the card's (``rules`` for policies)."""
        return self.raw_prompt or self._carded()[1]

    def declared_policy(self) -> dict[str, Any]:
        """Return what this model declares to the graphs, read from its card, not its engine.

        The fields of :class:`~langgraph_parallel.agent.policy.PolicySpec`: the prompt style and
        raw prompt, the passage budget, constrained decoding (both chat models pass a
        ``regex`` to vLLM's structured outputs), whether replies carry logprobs, several
        samples per call (``n``, one vLLM request), and whether the engine is in this process.
        Read once (the card is a file; steps ask every time).
        """
        if self._declared is None:
            self._declared = self._declare()
        return dict(self._declared)

    def _declare(self) -> dict[str, Any]:
        return {
            "style": self.style,
            "raw_prompt": self.prompt_kind,
            "passage_sentences": self.passage_sentences,
            "constrained_decoding": True,
            "logprobs": self.logprobs,
            "multi_sample": True,
            "in_process_engine": self.IN_PROCESS,
        }

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools: the policy's steps become calls of ``search`` (and ``answer``).

        The policy's ``<search>`` steps come back as one ``search`` call with ``query_list``,
        its answers as content (or an ``answer`` call), decoded with the action grammar; see
        :mod:`~langgraph_parallel.dialect.tool_calls` (the ``dialect`` field names another).
        Any other tools may be bound too (so middleware that adds tools keeps working), but a
        search policy calls only those two; without a ``search`` tool every step is
        answer-only.

        Args:
            tools: The tools (``parallel_search_tool(index)`` makes the ``search`` one).
            tool_choice: ``"none"`` makes the step answer-only (as a graph's final answer
                step); other values are accepted and change nothing: every step is a search
                or an answer.
            **kwargs: More call options to bind (``max_tokens``, ``temperature``, ...).
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """Return a runnable whose reply is ``schema``: decoded under its JSON schema, parsed.

        The engine decodes under the schema (vLLM structured outputs, ``json``), so the reply is
        valid JSON of that shape; a pydantic class comes back as its instance, a JSON schema
        (or a ``TypedDict``) as a dict. Only ``method="json_schema"`` is offered: the policies
        make no function calls of their own to carry a schema.

        Args:
            schema: A pydantic class, a ``TypedDict`` or a JSON schema.
            include_raw: Return ``{"raw": AIMessage, "parsed": ..., "parsing_error": ...}``.
            **kwargs: ``method="json_schema"`` (the only one) and ``strict`` (ignored: the
                decoding is always strict).

        Raises:
            UserError: Another ``method`` (``function_calling``, ``json_mode``).
        """
        from langchain_core.exceptions import OutputParserException
        from langchain_core.runnables import RunnableLambda
        from langchain_core.utils.function_calling import convert_to_json_schema
        from pydantic import BaseModel

        method = kwargs.pop("method", "json_schema")
        kwargs.pop("strict", None)
        if method != "json_schema" or kwargs:
            raise UserError(
                f"{type(self).__name__}.with_structured_output decodes under the JSON schema "
                f"(method='json_schema'); got method={method!r}"
                + (f" and {sorted(kwargs)}" if kwargs else "")
                + ". For tool calls, bind_tools a search tool instead."
            )
        model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        # A JSON schema is the engine's own input; a class is converted to one.
        json_schema = schema if isinstance(schema, dict) else convert_to_json_schema(schema)

        def parsed(raw: AIMessage) -> Any:
            # Strict: a reply cut by max_tokens is an error, never a partial object.
            if raw.response_metadata.get("finish_reason") == "length":
                raise OutputParserException(
                    f"the reply was cut at max_tokens ({self.max_tokens}) before its JSON "
                    "ended; raise max_tokens",
                    llm_output=raw.text,
                )
            try:
                return model.model_validate_json(raw.text) if model else json.loads(raw.text)
            except ValueError as exc:
                raise OutputParserException(str(exc), llm_output=raw.text) from exc

        def with_raw(raw: AIMessage) -> dict[str, Any]:
            try:
                return {"raw": raw, "parsed": parsed(raw), "parsing_error": None}
            except OutputParserException as exc:  # as langchain's own include_raw reports it
                return {"raw": raw, "parsed": None, "parsing_error": exc}

        bound = self.bind(json_schema=json_schema)
        return bound | RunnableLambda(with_raw if include_raw else parsed)

    def tool_step(
        self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[list[BaseMessage], list[str] | None, ToolReader | None]:
        """Prepare a call that has bound tools (the :attr:`dialect`'s ``prepare``)."""
        if "tools" not in kwargs:  # a plain call: nothing to render differently, no engine use
            return list(messages), stop, None
        return tool_dialect(self.dialect).prepare(
            messages, stop, kwargs, style=self.style, kind=self.prompt_kind, regex=self.regex
        )

    @staticmethod
    def tool_reply(result: ChatResult, step: ToolReader | None) -> ChatResult:
        """Return ``result`` read as tool calls when the call had bound tools."""
        return result if step is None else step.reply(result)

    # One generate path for both models: a call's bound tools are prepared and read back
    # here; each model only completes the prepared messages (in process or over HTTP).
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        messages, stop, step = self.tool_step(messages, stop, kwargs)
        return self.tool_reply(self._complete(messages, stop, kwargs), step)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        messages, stop, step = self.tool_step(messages, stop, kwargs)
        return self.tool_reply(await self._acomplete(messages, stop, kwargs), step)

    def _complete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        """Complete the prepared messages with the call's options (each model its own way)."""
        raise NotImplementedError

    async def _acomplete(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatResult:
        """:meth:`_complete` without blocking the event loop (each model its own way)."""
        raise NotImplementedError

    def sampling(
        self, stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any]]:
        """Return a call's regex and sampling options; the options it names leave ``kwargs``.

        ``top_logprobs`` (a call's, else the field's) is how many alternatives each token's
        logprobs list; the model drops it where ``logprobs`` is off. A step that keeps no
        logprobs asks for 0 (:func:`~langgraph_parallel.agent.step.step_options`).
        ``json_schema`` (from :meth:`with_structured_output`) decodes under a JSON schema.
        """
        regex = kwargs.pop("regex", self.regex)
        return regex, {
            "json_schema": kwargs.pop("json_schema", None),
            "top_logprobs": kwargs.pop("top_logprobs", self.top_logprobs),
            "n": kwargs.pop("n", self.n),
            "temperature": kwargs.pop("temperature", self.temperature),
            "top_p": kwargs.pop("top_p", self.top_p),
            "max_tokens": kwargs.pop("max_tokens", self.max_tokens),
            "seed": kwargs.pop("seed", self.seed),
            "stop": stop if stop is not None else self.stop,
        }


_ROLES = {AIMessage: "assistant", HumanMessage: "user", SystemMessage: "system"}


def message_text(message: BaseMessage) -> str:
    """Return a message's text: string content, or the text parts of a content list."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part if isinstance(part, str) else str(part.get("text", "")) for part in content)


def prompt_text(message: BaseMessage, special: SpecialTokens | None = None) -> str:
    """Return a message's text as the prompt holds it: outside text with ``special`` inert.

    Outside text is every message but the model's own steps
    (:func:`~.special_tokens.outside_text`); ``None`` leaves the text as it is.
    """
    text = message_text(message)
    return special.inert(text) if special is not None and outside_text(message) else text


def raw_text(messages: Sequence[BaseMessage], special: SpecialTokens | None = None) -> str:
    """Return the ``raw``-style prompt: the messages' texts concatenated into one document.

    Args:
        messages: The conversation.
        special: The model's special tokens, made inert in outside text (:func:`prompt_text`).
    """
    return "".join(prompt_text(m, special) for m in messages)


def chat_turns(
    messages: Sequence[BaseMessage], special: SpecialTokens | None = None
) -> list[dict[str, str]]:
    """Return the ``chat``-style turns: role and text, tool results as user turns.

    Args:
        messages: The conversation.
        special: The model's special tokens, made inert in outside text (:func:`prompt_text`),
            so only the chat template writes control tokens.
    """
    return [
        {"role": _ROLES.get(type(m), "user"), "content": prompt_text(m, special)} for m in messages
    ]


def generation(
    text: str,
    *,
    model: str,
    finish_reason: str | None,
    stop_reason: Any,
    prompt_tokens: int,
    output_tokens: int,
    cached_tokens: int,
    first: bool,
    logprobs: list[dict[str, Any]] | None,
) -> ChatGeneration:
    """Return one sample of a reply as a ``ChatGeneration``.

    The engine prefills once per request, so only the ``first`` sample is charged the prompt
    and its cached part; sums over samples then stay true.
    """
    input_tokens = prompt_tokens if first else 0
    usage = UsageMetadata(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        input_token_details=InputTokenDetails(cache_read=cached_tokens if first else 0),
    )
    metadata: dict[str, Any] = {
        "model_name": model,
        "finish_reason": finish_reason,
        "stop_reason": stop_reason,
    }
    if logprobs is not None:
        metadata["logprobs"] = {"content": logprobs}
    message = AIMessage(content=text, response_metadata=metadata, usage_metadata=usage)
    return ChatGeneration(message=message)
