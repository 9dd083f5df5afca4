"""A step whose prompt no longer fits the model's context: how to tell, and the trimmed retry.

A trajectory that repeats searches can fill a small model's context (``max_model_len``: 9 of
128 ParallelMuse trajectories on the shipped policy ended ``model_error: VLLMValidationError:
This model's maximum context length is ...``, issue 55), losing the evidence it had. The
``think`` node then answers instead: the same step again, answer-only, over the transcript with
the older observations' passages left out (:func:`trimmed`), then, if that is still too long,
with every observation's. Nothing changes for a run whose prompts fit.

When is a prompt too long: a model that declares its window and counts tokens exactly
(``PolicySpec.context_tokens`` and ``get_num_tokens_from_messages``; ``ChatVLLM``) has each
prompt counted before it is sent, with room for the reply, so the engine never refuses one.
Any other model (a served one's tokenizer is on the server) says so itself: the refusal, in
the words of vLLM, OpenAI and Anthropic (:func:`is_context_overflow`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["LEFT_OUT", "is_context_overflow", "trimmed"]

_OVERFLOW = re.compile(
    r"maximum context length|longer than the maximum model length|context_length_exceeded"
    r"|prompt is too long",
    re.IGNORECASE,
)

LEFT_OUT = "\n\n<information>Results left out: the context is full.</information>\n\n"
"""What an observation reads once its passages are left out of a trimmed prompt."""


def is_context_overflow(exc: BaseException) -> bool:
    """Whether a model call failed because its prompt does not fit the model's context.

    vLLM (in process and served): ``This model's maximum context length is N tokens. However,
    your prompt contains M input tokens ...``; OpenAI: ``context_length_exceeded``; Anthropic:
    ``prompt is too long``. The exception's causes are read too.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if _OVERFLOW.search(str(seen)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def trimmed(messages: Sequence[BaseMessage], keep_last: bool) -> list[BaseMessage] | None:
    """Return ``messages`` with the observations' passages left out, or ``None`` if none was.

    The opening prompt and every step stay; each observation (a human message holding an
    ``<information>`` block) becomes :data:`LEFT_OUT`, except the last one when
    ``keep_last``.
    """
    observations = [
        i
        for i, m in enumerate(messages)
        if i > 0 and isinstance(m, HumanMessage) and "<information>" in m.text
    ]
    cut = set(observations[:-1] if keep_last else observations)
    cut = {i for i in cut if messages[i].text != LEFT_OUT}
    if not cut:
        return None
    return [HumanMessage(LEFT_OUT) if i in cut else m for i, m in enumerate(messages)]
