"""Build-time checks of what a graph factory is given, each failing with the fix in its message.

A bad value found here costs nothing; the same value found mid-run is a raw ``TypeError`` from
deep in a node (a ``None`` model) or a run that goes on silently wrong (a search timeout of 0
times every search out, and the run still answers).
"""

from __future__ import annotations

import math
from typing import cast

from langgraph_parallel.errors import UserError

__all__ = ["check_model", "check_search_timeout"]


def check_model(model: object, where: str) -> None:
    """Refuse a ``model`` that is not a chat model (``None``, a model's name, ...).

    Any object with ``invoke`` passes (a LangChain ``BaseChatModel``, a fake one in tests); the
    rest of what a model can do is read from its declared policy, not probed here.

    Args:
        model: What the factory was given as its model.
        where: The factory (and argument) it was given to, quoted in the error.

    Raises:
        UserError: Saying what came and how to make a chat model.
    """
    if callable(getattr(model, "invoke", None)) and not isinstance(model, (str, bytes)):
        return
    if isinstance(model, str):
        hint = (
            f"a name is not a model: pass init_chat_model({model!r}) (from langchain.chat_models), "
            f'or ChatVLLM(model="{model}") for an embedded one'
        )
    else:
        hint = (
            "pass a LangChain chat model, e.g. ChatVLLM(model='smollm2-parallel'), "
            "ChatOpenAI(...) or init_chat_model('provider:model')"
        )
    raise UserError(f"{where} needs a chat model, got {type(model).__name__}: {hint}.")


def check_search_timeout(value: object, name: str = "search_timeout") -> None:
    """Refuse a search timeout that is not a finite number of seconds above 0.

    Checked when a graph is built and when a run's ``context`` sets it: at 0 (or below) every
    search would be reported as timed out and every run would go on without documents.

    Args:
        value: The timeout given.
        name: The setting's name where it was given (the tool calls it ``timeout``).

    Raises:
        UserError: Naming the setting, what it got and a valid value.
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(cast(float, value)) or cast(float, value) <= 0:
        raise UserError(
            f"{name} must be a number of seconds above 0, e.g. {name}=60 (got {value!r}): "
            "at 0 or below every search times out."
        )
