"""Synthesise SFT trajectories by running the real graph on a scripted teacher.

Train and serve must agree byte for byte: the prompt, the ``<information>`` blocks and the
message joins a trained model sees at inference are whatever the ParallelSearch graph renders.
So nothing here formats a transcript. :class:`ScriptedTeacher` is a chat model that replays the
gold steps of one question (:func:`gold_steps`); the graph runs on it with the real searcher,
and its final ``messages`` are the training example. A trajectory is kept only when the graph
ran every scripted step, ended with the gold answer, every gold paragraph was among the results
of its turn, and, under a passage budget (``passage_sentences``), every supporting sentence the
row marks for those paragraphs is within the shown text (otherwise the example would teach
answering without evidence, or from evidence the truncation removed). Rows that mark no
sentences (IRCoT-format HotpotQA rows) get the title check alone.

The budget reaches the graph the way a trained policy's does at inference: the teacher declares
it (``passage_sentences``, as a policy's card does) and the graph takes the model's value, so
the observations are made by the very code and setting the trained model will meet.

:func:`~.encode.encode_transcript` tokenizes the joined transcript exactly as ``ChatVLLM`` in
raw style does (one ``tokenizer.encode`` of the whole text) and marks the model's own tokens;
prompt and observation tokens carry no loss.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.models.replies import message_text
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.protocol import action_regex
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.train.gold import GoldQuestion, Policy
from langgraph_parallel.train.reading import reading

THINK_BUDGET = 280
"""Characters of a ``<think>`` body (the action grammar allows 300)."""


class ScriptedTeacher(OneReplyChatModel):
    """Replays fixed steps: the n-th call (n = assistant messages so far) returns ``steps[n]``.

    It reports ``style == "raw"`` and ``raw_prompt == "rules"``, so the graph builds the short
    prompt of trained policies, as it will for them at inference, and the passage budget the
    policy will be trained with (``passage_sentences``, recorded in its card).
    """

    steps: list[str]
    style: str = "raw"
    raw_prompt: str = "rules"
    passage_sentences: int | None = None

    def respond(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        """Return the next scripted step (an unknown answer once the script is used up)."""
        n = sum(isinstance(m, AIMessage) for m in messages)
        return self.steps[n] if n < len(self.steps) else "<answer> unknown </answer>"


class MemoSearcher:
    """Cache a searcher's results per (query, k): both policies search the same titles."""

    def __init__(self, search: Any) -> None:
        self.search = search
        self._cache: dict[tuple[str, int], list[Passage]] = {}
        self._lock = threading.Lock()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search the queries not seen before; return all from the cache."""
        with self._lock:
            new = [q for q in dict.fromkeys(queries) if (q, k) not in self._cache]
        if new:
            for query, hits in zip(new, self.search.batch_search(new, k), strict=True):
                with self._lock:
                    self._cache[(query, k)] = hits
        return [self._cache[(q, k)] for q in queries]


def gold_steps(gold: GoldQuestion, policy: Policy) -> list[str]:
    """Script the teacher's steps for one question: a search per turn, then the answer.

    The first ``<think>`` states the plan; every later one restates the supporting sentences of
    the titles just read (shortened to :data:`THINK_BUDGET`) and names what to look up next; the
    last one states the values read and the conclusion (:func:`~.reading.reading`).
    """
    turns = gold.turns(policy)
    first = turns[0]
    if len(first) > 1:
        plan = f"I need {_and(first)}; they are independent, so I search them at once."
    elif len(gold.hops[0]) > 1:
        plan = f"I need {_and(list(gold.hops[0]))}. First {first[0]}."
    else:
        plan = f"First I need {first[0]}."
    steps = [_step(plan, "search", " ## ".join(first))]
    for previous, titles in zip(turns, turns[1:], strict=False):
        nxt = f" Now {_and(titles)}."
        steps.append(
            _step(
                _grounded(gold, previous, THINK_BUDGET - len(nxt)) + nxt,
                "search",
                " ## ".join(titles),
            )
        )
    final = reading(
        gold.question,
        turns[-1] if len(turns[-1]) > 1 else [t for level in gold.hops[-1:] for t in level],
        gold.facts,
        gold.answer,
        THINK_BUDGET,
        lambda budget: _grounded(gold, turns[-1], budget, prefer=gold.answer),
    )
    steps.append(_step(final, "answer", gold.answer))
    return steps


def valid_steps(steps: Sequence[str], decompose: bool) -> bool:
    """Whether every step fits the action grammar the engine constrains decoding to."""
    pattern = re.compile(action_regex(decompose))
    return all(pattern.fullmatch(step) for step in steps)


def synthesize(
    golds: Iterable[GoldQuestion],
    policy: Policy,
    search: Any,
    *,
    max_turns: int = 4,
    top_k: int = 3,
    passage_sentences: int | None = None,
    concurrency: int = 8,
) -> list[dict[str, Any]]:
    """Run the graph on the teacher for every gold question; return the kept trajectories.

    Each record has ``id``, ``dataset``, ``type``, ``question_class``, ``policy`` and
    ``messages`` (``[{"role": "user"|"assistant", "content": str}]``, as the graph left them).
    ``passage_sentences`` is the observation budget (``None``: whole passages).
    """
    decompose = policy == "parallel"
    jobs = []
    for gold in golds:
        steps = gold_steps(gold, policy)
        if len(steps) <= max_turns and valid_steps(steps, decompose):
            jobs.append((gold, steps))
    searcher = search if isinstance(search, MemoSearcher) else MemoSearcher(search)

    def run(job: tuple[GoldQuestion, list[str]]) -> dict[str, Any] | None:
        gold, steps = job
        graph = create_parallel_search_graph(
            ScriptedTeacher(steps=steps, passage_sentences=passage_sentences),
            searcher,
            max_turns=max_turns,
            top_k=top_k,
            decompose=decompose,
            retry_policy=None,
        )
        state = graph.invoke({"question": gold.question})
        return _keep(gold, policy, steps, state, passage_sentences)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(concurrency) as pool:
        return [r for r in pool.map(run, jobs) if r is not None]


def _keep(
    gold: GoldQuestion,
    policy: Policy,
    steps: list[str],
    state: dict[str, Any],
    passage_sentences: int | None,
) -> dict[str, Any] | None:
    messages: list[BaseMessage] = list(state.get("transcript") or [])  # the model's, not the chat
    said = [message_text(m) for m in messages if isinstance(m, AIMessage)]
    if said != steps or state.get("answer") != gold.answer:
        return None
    observations = [message_text(m) for m in messages[2::2]]
    for titles, observation in zip(gold.turns(policy), observations, strict=False):
        if any(f"(Title: {title})" not in observation for title in titles):
            return None
        if passage_sentences is None:
            continue  # whole passages: the title check alone, as before budgets existed
        # A budget that cut a marked supporting sentence off leaves the answer unsupported.
        # Containment anywhere in the observation: the shown texts are passage prefixes.
        marked = [fact for title in titles if title in gold.marked for fact in gold.facts[title]]
        if any(fact not in observation for fact in marked):
            return None
    return {
        "id": gold.id,
        "dataset": gold.dataset,
        "type": gold.type,
        "question_class": gold.question_class,
        "policy": policy,
        "messages": [
            {
                "role": "assistant" if isinstance(m, AIMessage) else "user",
                "content": message_text(m),
            }
            for m in messages
        ],
    }


def _step(think: str, tag: str, body: str) -> str:
    return f"<think> {think} </think>\n<{tag}> {body} </{tag}>"


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _grounded(gold: GoldQuestion, titles: Sequence[str], budget: int, prefer: str = "") -> str:
    """Join the titles' supporting sentences, each title cut at a word to its share of ``budget``.

    Sentences that contain ``prefer`` (the answer, in the last step) go first, so shortening
    never drops the sentence the answer comes from.
    """
    share = max(40, budget // len(titles)) - 1
    parts = []
    for title in titles:
        sents = sorted(gold.facts[title], key=lambda s: prefer.lower() not in s.lower())
        text = " ".join(sents).replace("<", "(")
        parts.append(_shorten(text, share))
    return " ".join(parts)[:budget]


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 3].rsplit(" ", 1)[0]
    return cut + "..."
