"""Stand-ins that let the examples run in a second: a scripted chat model and a tiny corpus.

Pass ``--real`` to an example to use the model and search the environment configures instead
(by default the embedded SmolLM2 on the in-process vLLM engine and the bundled HotpotQA corpus;
see ``langgraph_parallel/apps/studio.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_parallel.dialect.tool_calls import prepare_tool_step
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.models.sampling import ConfigurableSampling
from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.retrieval.documents import Passage

PASSAGES = [
    Passage("1", "Scott Derrickson", "Scott Derrickson is an American director and screenwriter."),
    Passage("2", "Ed Wood", "Edward Davis Wood Jr. was an American filmmaker and actor."),
    Passage("3", "Doctor Strange (2016 film)", "Doctor Strange was directed by Scott Derrickson."),
    Passage("4", "Plan 9 from Outer Space", "Plan 9 is a 1957 film by Ed Wood."),
    Passage("5", "Jean Renoir", "Jean Renoir was a French film director and screenwriter."),
]


class TinySearcher:
    """Ranks :data:`PASSAGES` by words shared with the query (a ``Searcher``)."""

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        def words(text: str) -> set[str]:
            return set(re.findall(r"\w+", text.lower()))

        return [
            sorted(PASSAGES, key=lambda p: -len(words(q) & words(f"{p.title} {p.text}")))[:k]
            for q in queries
        ]


class DemoChatModel(OneReplyChatModel):
    """Searches every page title of :data:`PASSAGES` named in the question, then answers.

    The reply depends only on the conversation, so ``batch`` and concurrent branches give the
    same answers as ``invoke``.
    """

    def respond(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        prompt = "".join(str(m.content) for m in messages)
        question = prompt.split("Question:")[-1]
        if "<information>[" not in prompt:  # no search results yet (observations start so)
            names = [p.title for p in PASSAGES if p.title in question] or [question.strip()]
            text = f"<think>Look up each one.</think>\n<search> {' ## '.join(names)} </search>"
        else:
            # Compare the nationalities on each sub-query's best page ("Doc 1").
            best = re.findall(r"Doc 1\(Title: [^)]*\) ([^\n]*)", prompt)
            found = {w for doc in best for w in ("American", "French") if w in doc}
            answer = "yes" if len(found) == 1 and len(best) > 1 else "no"
            text = f"<think>I read the best page of each.</think>\n<answer> {answer} </answer>"
        usage = {"input_tokens": len(prompt.split()), "output_tokens": len(text.split())}
        return AIMessage(text, usage_metadata={**usage, "total_tokens": sum(usage.values())})


class DemoToolModel(DemoChatModel):
    """:class:`DemoChatModel` as a tool-calling model, made one the way ``ChatVLLM`` is.

    ``bind_tools`` and each call go through ``langgraph_parallel.dialect.tool_calls``: the
    ``create_agent`` conversation is rendered as the graph's raw transcript, and the step the
    demo writes comes back as a ``search`` tool call or as the answer.
    """

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kw: Any
    ) -> Runnable[Any, AIMessage]:
        if tool_choice is not None:
            kw["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        prompt, stop, step = prepare_tool_step(
            messages, stop, kw, style="raw", kind="rules", regex=None
        )
        result = super()._generate(prompt, stop, **kw)
        return result if step is None else step.reply(result)


class DemoMuseModel(ConfigurableSampling, DemoToolModel):
    """:class:`DemoToolModel` as a sampled model with token logprobs, for ParallelMuse.

    It reads the run's sampling from its config as ``ChatVLLM`` does
    (:class:`~langgraph_parallel.models.sampling.ConfigurableSampling`): the sample with seed 2
    looks up one name only, and so answers "no". Each step carries token logprobs in the
    OpenAI shape; the search's tokens are spread over three candidates (the uncertain part),
    the rest over one.
    """

    def respond(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        reply = super().respond(messages, stop)  # the script is the sample: only the seed counts
        text = reply.text.replace("Scott Derrickson ## ", "") if kw.get("seed") == 2 else reply.text
        metadata = {"logprobs": {"content": demo_logprobs(text)}}
        return AIMessage(text, response_metadata=metadata, usage_metadata=reply.usage_metadata)


def demo_logprobs(text: str) -> list[dict[str, Any]]:
    """Three-character tokens; one starting inside ``<search>`` has three equal candidates."""
    searches = region_spans(text)["exploration"]
    out = []
    for start in range(0, len(text), 3):
        n = 3 if any(s <= start < e for s, e in searches) else 1
        top = [{"token": f"c{i}", "logprob": -math.log(n)} for i in range(n)]
        out.append({"token": text[start : start + 3], "logprob": -math.log(n), "top_logprobs": top})
    return out


def model_and_search(real: bool) -> tuple[BaseChatModel, Any]:
    """The demo stand-ins, or (``real``) the environment's model and searcher."""
    if not real:
        return DemoChatModel(), TinySearcher()
    from langgraph_parallel.apps.studio import model_from_env, search_from_env

    return model_from_env(), search_from_env()
