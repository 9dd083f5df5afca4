"""Graph nodes written once and run on both paths: ``invoke`` blocks, ``ainvoke`` awaits.

Why this module: under ``ainvoke`` LangGraph runs a plain callable node in the event loop's
default thread pool (``cpu_count + 4`` threads: 6 on a 2-core machine), so a server running many
graphs at once has at most that many model calls in flight, whatever its engine could batch; and
an ``async def`` node cannot run under ``invoke``. LangGraph's public API has no node with both
paths (its internal ``RunnableCallable`` has one; an "async invokable" node protocol was
deferred, langgraph PR #5183). ``RunnableLambda(func, afunc)`` from langchain-core is the public
pair, and :func:`as_node` builds one.

So that each node's logic (error handling included) exists once, a node with I/O writes its body
as a generator that yields what it waits for, an :class:`Invoke` (a chat model call), a
:class:`Wait` (a future with a timeout), a :class:`Blocking` call or an :class:`Either` (a call
with both forms), and gets the outcome back from the ``yield`` (or the exception raised there).
:func:`run_body` drives a body with blocking calls, :func:`arun_body` with ``await
model.ainvoke(...)``, ``asyncio.wrap_future``, ``asyncio.to_thread`` and the awaitable forms.
Nodes without I/O run directly on both paths.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime, get_runtime

__all__ = [
    "Blocking",
    "Body",
    "DualNode",
    "Either",
    "Invoke",
    "Wait",
    "arun_body",
    "as_node",
    "run_body",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Invoke:
    """A chat model call a node body waits for; the reply message is sent back.

    The call is tagged ``nostream`` (LangGraph's ``TAG_NOSTREAM``) unless ``stream`` is set:
    what a node's model writes is protocol text (tags, a report, a verdict) that the node
    renders into chat messages itself (:mod:`~.chat`), so LangGraph's ``messages`` stream mode
    must not show it token by token as if it were said to the user.
    """

    model: BaseChatModel
    messages: list[BaseMessage]
    options: dict[str, Any] = field(default_factory=dict)
    stream: bool = False

    def config(self) -> RunnableConfig | None:
        """Return the call's config: the ``nostream`` tag unless ``stream``."""
        return None if self.stream else {"tags": [TAG_NOSTREAM]}


@dataclass(frozen=True)
class Wait:
    """A future a node body waits for, at most ``timeout`` seconds; its result is sent back.

    A timeout raises the builtin :class:`TimeoutError` at the ``yield`` (on both paths and on
    every Python version) after cancelling the future.
    """

    future: concurrent.futures.Future[Any]
    timeout: float


@dataclass(frozen=True)
class Blocking:
    """A blocking call a node body waits for, run in a worker thread under ``ainvoke``.

    For file reads and the first use of an in-process model (which starts its engine); the
    result is sent back.
    """

    func: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Either:
    """A call with a blocking and an awaitable form; the result is sent back.

    ``func`` runs on the blocking path and ``afunc`` is awaited under ``ainvoke``: a runnable's
    ``invoke`` and ``ainvoke``, so a wrapped agent whose tools are async-only runs its async path.
    """

    func: Callable[..., Any]
    afunc: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()


Effect = Invoke | Wait | Blocking | Either
Body = Generator[Effect, Any, _T]
"""A node body: yields effects, receives their outcomes, returns the node's update."""


def _timed_out(wait: Wait) -> TimeoutError:
    wait.future.cancel()
    return TimeoutError(f"no result after {wait.timeout:g} s")


def _block(effect: Effect) -> Any:
    if isinstance(effect, Invoke):
        return effect.model.invoke(effect.messages, effect.config(), **effect.options)
    if isinstance(effect, (Blocking, Either)):
        return effect.func(*effect.args)
    try:
        return effect.future.result(timeout=effect.timeout)
    except concurrent.futures.TimeoutError:  # not the builtin one before Python 3.11
        raise _timed_out(effect) from None


async def _await(effect: Effect) -> Any:
    if isinstance(effect, Invoke):
        return await effect.model.ainvoke(effect.messages, effect.config(), **effect.options)
    if isinstance(effect, Blocking):
        return await asyncio.to_thread(effect.func, *effect.args)
    if isinstance(effect, Either):
        return await effect.afunc(*effect.args)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(effect.future), effect.timeout)
    except TimeoutError:  # asyncio.wait_for raises the builtin one from Python 3.11
        raise _timed_out(effect) from None


@dataclass(frozen=True)
class _Returned:
    value: Any


def _resume(body: Body[Any], outcome: Any = None, error: Exception | None = None) -> Any:
    """Send ``outcome`` into ``body`` (or raise ``error`` at its ``yield``).

    Returns the next effect, or :class:`_Returned` with the body's return value.
    """
    try:
        return body.send(outcome) if error is None else body.throw(error)
    except StopIteration as stop:
        return _Returned(stop.value)


def run_body(body: Body[_T]) -> _T:
    """Drive ``body`` with blocking calls and return what it returns."""
    step = _resume(body)
    while not isinstance(step, _Returned):
        try:
            outcome = _block(step)
        except Exception as exc:  # raised inside the body, which decides what it means
            step = _resume(body, error=exc)
        else:
            step = _resume(body, outcome)
    return step.value


async def arun_body(body: Body[_T]) -> _T:
    """Drive ``body`` on the event loop (model calls awaited) and return what it returns."""
    step = _resume(body)
    while not isinstance(step, _Returned):
        try:
            outcome = await _await(step)
        except Exception as exc:  # raised inside the body, which decides what it means
            step = _resume(body, error=exc)
        else:
            step = _resume(body, outcome)
    return step.value


class DualNode:
    """Base of nodes with I/O: subclasses write :meth:`body`; calling runs it either way.

    ``node(state, runtime)`` blocks, ``await node.acall(state, runtime)`` awaits; add the node
    to a graph with :func:`as_node` so LangGraph picks the path that matches the run.
    """

    def body(self, state: Any, runtime: Runtime[Any]) -> Body[Any]:
        """Return the node's body for one run (a generator; see the module docstring)."""
        raise NotImplementedError

    def __call__(self, state: Any, runtime: Runtime[Any]) -> Any:
        """Run the node, blocking on its I/O."""
        return run_body(self.body(state, runtime))

    async def acall(self, state: Any, runtime: Runtime[Any]) -> Any:
        """Run the node, awaiting its I/O."""
        return await arun_body(self.body(state, runtime))


def as_node(node: DualNode | Callable[..., Any], name: str) -> RunnableLambda[Any, Any]:
    """Return ``node`` as a LangGraph node with a sync and an async path.

    Args:
        node: A :class:`DualNode`, or a function without I/O taking ``(state)`` or
            ``(state, runtime)`` (run directly on both paths: no thread hop under ``ainvoke``).
        name: The node's name in traces.

    Add it with ``builder.add_node(name, as_node(...), destinations=...)``: a ``RunnableLambda``
    has no return annotation for LangGraph to read ``Command`` routes from, so a node that routes
    with ``Command`` names its destinations there (Studio draws them).
    """
    if isinstance(node, DualNode):
        dual = node

        def run(state: Any) -> Any:
            return dual(state, get_runtime())

        async def arun(state: Any) -> Any:
            return await dual.acall(state, get_runtime())

        return RunnableLambda(run, afunc=arun, name=name)
    func = node
    with_runtime = len(inspect.signature(func).parameters) > 1

    def call(state: Any) -> Any:
        return func(state, get_runtime()) if with_runtime else func(state)

    async def acall(state: Any) -> Any:
        return call(state)

    return RunnableLambda(call, afunc=acall, name=name)
