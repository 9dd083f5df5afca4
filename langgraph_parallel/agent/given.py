"""Steps sampled before a run, handed to the loop through the run's config, keyed by prompt.

A caller that has sampled a step already (ParallelMuse draws several candidates of a branch
point in one engine call and keeps the ones that explore:
:mod:`~langgraph_parallel.parallel_muse.candidates`) runs the loop from that point with the
chosen reply in ``config["configurable"]`` (:func:`given_steps_config`). The loop's ``think``
asks :func:`given_step` before it calls the model: a reply given for the exact prompt it would
send is its reply, read as any other (counters, logprobs, parse), and no call is made. The key is
the prompt itself (:func:`prompt_digest`), not a step number, so a reply is only ever used on
the prompt it was sampled on: a run whose prompt turned out different (a trimmed transcript)
calls the model as usual.

Replies travel as ``messages_to_dict`` dicts, so the config stays plain data for any
serializer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.runnables import ensure_config

__all__ = ["GIVEN_STEPS", "given_step", "given_steps_config", "prompt_digest"]

GIVEN_STEPS = "given_steps"
"""The ``configurable`` key holding prompt digest -> reply (a ``message_to_dict`` dict)."""


def prompt_digest(messages: Sequence[BaseMessage]) -> str:
    """Return a digest of a prompt: each message's kind and content, in order."""
    parts = [[message.type, message.content] for message in messages]
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def given_steps_config(replies: Mapping[str, BaseMessage]) -> dict[str, Any]:
    """Return the ``configurable`` entry handing ``replies`` (prompt digest -> reply) to a run."""
    return {GIVEN_STEPS: {key: message_to_dict(reply) for key, reply in replies.items()}}


def given_step(messages: Sequence[BaseMessage]) -> BaseMessage | None:
    """Return the reply the running config gives for the prompt ``messages``, or ``None``.

    Read from the config of the node that asks (LangChain's current run config), as
    :func:`~langgraph_parallel.models.sampling.configured_sampling` reads the sampling.
    """
    configurable = ensure_config(None).get("configurable") or {}
    given = configurable.get(GIVEN_STEPS)
    if not isinstance(given, Mapping) or not given:
        return None
    found = given.get(prompt_digest(messages))
    return messages_from_dict([dict(found)])[0] if isinstance(found, Mapping) else None
