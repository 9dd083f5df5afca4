"""``OneReplyChatModel``: the base of chat models that answer a prompt with one computed message.

LangChain's ``BaseChatModel`` leaves two abstract members to every subclass: ``_generate``,
which must wrap the reply into a ``ChatResult`` of one ``ChatGeneration``, and ``_llm_type``,
a name LangChain only puts into cache keys and serialised parameters. A model whose reply is
computed from the prompt (the policy being trained, the scripted teacher of SFT, the demos'
and the tests' scripted models) then writes the same wrapper and a made-up name each time.
Here it writes one method, :meth:`~OneReplyChatModel.respond`, returning the message (with its
usage, tool calls or logprobs) or just its text; the wrapper and the name are written once.

LangChain's own ``SimpleChatModel`` does the same for a reply that is a string only, so it
cannot carry ``usage_metadata``, tool calls or logprobs, and still leaves ``_llm_type`` open.
The async path is ``BaseChatModel``'s: ``respond`` runs in an executor. It composes with
:class:`~.sampling.ConfigurableSampling` (``class M(ConfigurableSampling, OneReplyChatModel)``),
whose ``invoke`` adds the run's sampling options to the call's ``kwargs``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["OneReplyChatModel"]


class OneReplyChatModel(BaseChatModel):
    """A chat model whose reply is one message computed by :meth:`respond` (module docstring).

    Example:
        >>> class Echo(OneReplyChatModel):
        ...     def respond(self, messages, stop, **kwargs):
        ...         return str(messages[-1].content)
        >>> Echo().invoke("hi").content
        'hi'
    """

    @abstractmethod
    def respond(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> AIMessage | str:
        """Return the reply to ``messages``: the message, or its text (a plain ``AIMessage``).

        Args:
            messages: The prompt.
            stop: The call's stop sequences (``None``: none given).
            **kwargs: The call's options (``max_tokens``, ``seed``, bound ``tools``, ...).
        """

    @property
    def _llm_type(self) -> str:
        # Only cache keys and serialised parameters read it: the class name tells them apart.
        return type(self).__name__

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.respond(messages, stop, **kwargs)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=message)])
