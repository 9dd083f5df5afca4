"""Sampling options of a run, set in ``config["configurable"]`` for a model the caller cannot reach.

A model inside a compiled agent (``create_agent``, a user's own graph) was bound when the agent
was built, so a caller that re-runs the agent (ParallelMuse forking it:
:mod:`~langgraph_parallel.parallel_muse.graph`) cannot pass it ``temperature=...`` per call.
What does reach every model call of a run is the run's config: LangChain hands the node's config,
``configurable`` included, to each runnable it calls. So the caller puts
``sampling_temperature``, ``sampling_top_p`` and ``sampling_seed`` there (:func:`sampling_config`):

- ``ChatVLLM`` and ``ChatVLLMServer`` read them (:class:`ConfigurableSampling`, a base any chat
  model can have); options the call names itself win;
- any other LangChain model reads them when built with
  ``init_chat_model(..., configurable_fields=("temperature", "top_p", "seed"),
  config_prefix="sampling")``, LangChain's own per-run model settings, under the same keys;
- a model that reads neither samples as it was built (give it ``temperature > 0`` then).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, ensure_config

__all__ = [
    "SAMPLING_FIELDS",
    "SAMPLING_PREFIX",
    "ConfigurableSampling",
    "configured_sampling",
    "sampling_config",
]

SAMPLING_PREFIX = "sampling"
"""``init_chat_model``'s ``config_prefix`` for the keys of :func:`sampling_config`."""
SAMPLING_FIELDS: tuple[str, ...] = ("temperature", "top_p", "seed")
"""The call options that can be set per run."""


def sampling_config(**options: Any) -> dict[str, Any]:
    """Return the ``configurable`` entries that set ``options`` (``temperature=0.6``, ...).

    Raises:
        ValueError: An option that is not one of :data:`SAMPLING_FIELDS`.
    """
    unknown = sorted(set(options) - set(SAMPLING_FIELDS))
    if unknown:
        raise ValueError(f"Only {', '.join(SAMPLING_FIELDS)} can be set per run (got {unknown}).")
    return {f"{SAMPLING_PREFIX}_{key}": value for key, value in options.items()}


def configured_sampling(config: RunnableConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the sampling options a run's config sets (see the module docstring).

    Args:
        config: The config a model was invoked with; the enclosing run's config (a graph
            node's) is merged in, as LangChain does for every call.

    Returns:
        ``{"temperature": ..., "top_p": ..., "seed": ...}``, only the ones set.
    """
    configurable = ensure_config(config).get("configurable") or {}  # type: ignore[arg-type]
    found = {key: configurable.get(f"{SAMPLING_PREFIX}_{key}") for key in SAMPLING_FIELDS}
    return {key: value for key, value in found.items() if value is not None}


class ConfigurableSampling(BaseChatModel):
    """A chat model that applies the sampling options its run's config sets (module docstring).

    ``invoke`` and ``ainvoke`` add them to the call's options (which win), so ``_generate``
    receives them as it receives ``model.invoke(messages, temperature=...)``'s.
    """

    def invoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """Call the model with the run's sampling options under the call's own."""
        options = {**configured_sampling(config), **kwargs}
        return super().invoke(input, config, stop=stop, **options)

    async def ainvoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """Async :meth:`invoke`."""
        options = {**configured_sampling(config), **kwargs}
        return await super().ainvoke(input, config, stop=stop, **options)
