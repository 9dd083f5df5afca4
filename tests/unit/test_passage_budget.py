"""The per-passage observation budget: the cut, where it comes from, and train/serve agreement."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lab.experiments.first_contact.passage_budget import (
    GoldSentences,
    budget_figures,
    gold_sentences,
    splitter_agreement,
)
from langgraph_parallel.agent.step import passage_budget
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import MODEL_CARD
from langgraph_parallel.parallel_search.context import SearchContext
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.retrieval.corpus import load_corpus
from langgraph_parallel.retrieval.documents import Passage, format_passages, shown_text
from langgraph_parallel.retrieval.sentences import marked_sentence_ends, sentence_ends
from langgraph_parallel.train.gold import gold_question
from langgraph_parallel.train.lora import serving_keys
from langgraph_parallel.train.synth import synthesize
from tests.fakes import ScriptedChatModel, rollouts_graph

THREE = "Ed Wood was an American filmmaker. He was born in 1924. He died in 1978."


def _passage(title: str = "Ed Wood", text: str = THREE, **kw: Any) -> Passage:
    return Passage(id=title, title=title, text=text, **kw)


# The splitter and the corpus's own boundaries


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (THREE, ["Ed Wood was an American filmmaker.", "He was born in 1924.", "He died in 1978."]),
        # Abbreviations, titles, initials and dotted acronyms end no sentence.
        (
            "Dr. Smith met J. R. R. Tolkien in St. Louis. The U.S. Army won No. 5 in Jan. 1942.",
            [
                "Dr. Smith met J. R. R. Tolkien in St. Louis.",
                "The U.S. Army won No. 5 in Jan. 1942.",
            ],
        ),
        # A closing quote stays with its sentence; a lower-case word after a period is no start.
        (
            'He sang "Help!" The song, e.g. this one, was a hit.',
            ['He sang "Help!"', "The song, e.g. this one, was a hit."],
        ),
        ("One sentence without an end", ["One sentence without an end"]),
        ("  ", []),
    ],
)
def test_splitter_finds_sentence_ends(text: str, sentences: list[str]) -> None:
    ends = sentence_ends(text)
    starts = [0, *ends][: len(ends)]
    assert [text[a:b].strip() for a, b in zip(starts, ends, strict=True)] == sentences


def test_marked_sentences_are_located_in_the_text_or_refused() -> None:
    # HotpotQA keeps the joining spaces at the start of each sentence.
    marked = ["A b c.", " D e.", " F."]
    assert marked_sentence_ends("A b c. D e. F.", marked) == (6, 11, 14)
    assert marked_sentence_ends("A b c.D e.F.", ["A b c.", "D e.", "F."]) == (6, 10, 12)
    assert marked_sentence_ends("A b c. D e. F.", ["A b c.", "F."]) == ()  # a gap: not a cover
    assert marked_sentence_ends("A b c. D e. F.", ["A b c.", "D e."]) == ()  # text left over
    assert marked_sentence_ends("A b c.", []) == ()


def test_a_corpus_with_sentence_lists_keeps_their_boundaries(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "title": "T", "text": "Mr. X. Y z.", "sentences": ["Mr. X.", " Y z."]},
        {"id": "2", "title": "U", "text": "No lists here. Two."},
        {"id": "3", "title": "V", "text": "Other text.", "sentences": ["Not it."]},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    marked, plain, wrong = load_corpus(path)
    assert marked.sentence_ends == (6, 11)  # the splitter would not cut after "Mr. X."
    assert shown_text(marked, 1) == "Mr. X."
    assert plain.sentence_ends == () and shown_text(plain, 1) == "No lists here."
    assert wrong.sentence_ends == ()


# The cut


def test_the_budget_keeps_the_title_and_the_first_n_sentences() -> None:
    passages = [_passage(), _passage("Short", "Only one sentence."), _passage("", THREE)]
    assert format_passages(passages, passage_sentences=1) == (
        "Doc 1(Title: Ed Wood) Ed Wood was an American filmmaker.\n"
        "Doc 2(Title: Short) Only one sentence.\n"
        "Doc 3 Ed Wood was an American filmmaker."
    )
    assert shown_text(passages[0], 2) == "Ed Wood was an American filmmaker. He was born in 1924."
    # Enough budget, or none, shows the passage as it is (today's rendering).
    for budget in (3, 10, None):
        assert shown_text(passages[0], budget) == THREE
    assert format_passages(passages, passage_sentences=None) == format_passages(passages)
    assert format_passages(passages) == "\n".join(
        [
            f"Doc 1(Title: Ed Wood) {THREE}",
            "Doc 2(Title: Short) Only one sentence.",
            f"Doc 3 {THREE}",
        ]
    )
    assert format_passages([], passage_sentences=1) == "No results."


def test_the_corpus_boundaries_win_over_the_splitter() -> None:
    passage = _passage(text="Born in the U.S. Army camp. Moved.", sentence_ends=(16, 27, 34))
    assert shown_text(passage, 1) == "Born in the U.S."
    assert shown_text(_passage(text=passage.text), 1) == "Born in the U.S. Army camp."


@pytest.mark.parametrize("bad", [0, -1])
def test_a_budget_below_one_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="passage_sentences"):
        shown_text(_passage(), bad)
    with pytest.raises(ValueError, match="passage_sentences"):
        SearchContext(passage_sentences=bad)
    with pytest.raises(ValueError, match="integer"):
        SearchContext(passage_sentences="2")  # type: ignore[arg-type]


# Where the budget comes from


class FixedSearcher:
    """Returns the same two three-sentence passages for every query."""

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        other = _passage("Tim Burton", "Tim Burton is a director. He made Ed Wood. He lives.")
        return [[_passage(), other][:k] for _ in queries]


class Declaring(ScriptedChatModel):
    """A raw-prompted scripted model that declares its passage budget, as a trained one does."""

    style: str = "raw"
    raw_prompt: str = "rules"
    passage_sentences: Any = None


STEPS = [
    "<think> Look it up. </think>\n<search> Ed Wood </search>",
    "<think> Found. </think>\n<answer> 1978 </answer>",
]


def _observation(model: Declaring, **options: Any) -> str:
    graph = create_parallel_search_graph(model, FixedSearcher(), **options)
    state = graph.invoke({"question": "When did Ed Wood die?"})
    return str(state["transcript"][2].content)


def test_the_graph_takes_the_models_budget_unless_the_caller_overrides() -> None:
    assert "He was born" in _observation(Declaring(script=STEPS))  # none declared: whole
    shown = _observation(Declaring(script=STEPS, passage_sentences=1))
    assert "(Title: Ed Wood) Ed Wood was an American filmmaker.\n" in shown
    assert "(Title: Tim Burton) Tim Burton is a director.\n" in shown
    assert "He was born" not in shown and "He made" not in shown
    whole = _observation(Declaring(script=STEPS, passage_sentences=1), passage_sentences=None)
    assert THREE in whole
    two = _observation(Declaring(script=STEPS), passage_sentences=2)
    assert "He was born in 1924." in two and "He died" not in two


def test_a_run_context_overrides_the_build_time_budget() -> None:
    graph = create_parallel_search_graph(
        Declaring(script=STEPS, passage_sentences=1), FixedSearcher()
    )
    state = graph.invoke({"question": "q"}, context={"passage_sentences": 2})
    assert "He was born in 1924." in str(state["transcript"][2].content)


def test_passage_budget_reads_the_models_declaration() -> None:
    assert passage_budget(Declaring(script=[], passage_sentences=2)) == 2
    assert passage_budget(Declaring(script=[])) is None
    assert passage_budget(Declaring(script=[], passage_sentences=2), None) is None
    assert passage_budget(Declaring(script=[], passage_sentences=2), 3) == 3
    for bad in (0, "2", True):
        with pytest.raises(UserError, match="declares passage_sentences"):
            passage_budget(Declaring(script=[], passage_sentences=bad))


def test_parallel_muse_rollouts_take_the_models_budget() -> None:
    model = Declaring(script=STEPS, passage_sentences=1)
    graph = rollouts_graph(model, FixedSearcher(), budget=1, max_turns=2)
    state = graph.invoke({"question": "When did Ed Wood die?"})
    observation = state["trajectories"][0]["messages"][2]["content"]
    assert (
        "Ed Wood was an American filmmaker.\n" in observation and "He was born" not in observation
    )
    override = rollouts_graph(
        Declaring(script=STEPS, passage_sentences=1),
        FixedSearcher(),
        budget=1,
        max_turns=2,
        passage_sentences=None,
    )
    assert THREE in override.invoke({"question": "q"})["trajectories"][0]["messages"][2]["content"]


def test_vllm_models_declare_the_budget_their_card_records(tmp_path: Path) -> None:
    from langgraph_parallel.models.served_chat import ChatVLLMServer
    from langgraph_parallel.models.vllm_chat import ChatVLLM

    (tmp_path / MODEL_CARD).write_text(json.dumps({"prompt_style": "raw", "passage_sentences": 2}))
    in_process = ChatVLLM(model=str(tmp_path))
    assert in_process.passage_sentences == 2
    assert in_process._worker is None  # read from the card: no engine started
    served = ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model=str(tmp_path))
    assert served.passage_sentences == 2
    graph = create_parallel_search_graph(served, FixedSearcher())
    assert graph.get_context_jsonschema()["properties"]["passage_sentences"]["default"] == 2
    # The shipped policies were trained on whole passages: their cards have no budget.
    assert ChatVLLM(model="smollm2-parallel").passage_sentences is None
    assert ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model="hub/x").passage_sentences is None


# Training: the synthesis shows exactly what inference shows


def _gold_row(fact_index: int) -> dict[str, Any]:
    sentences = ["Ed Wood was an American filmmaker.", " He was born in 1924.", " He died in 1978."]
    return {
        "id": "q1",
        "question": "When did Ed Wood die?",
        "answer": "1978",
        "type": "bridge",
        "supporting_titles": ["Ed Wood", "Tim Burton"],
        "supporting_facts": [["Ed Wood", fact_index], ["Tim Burton", 0]],
        "context": [
            {"title": "Ed Wood", "sentences": sentences},
            {"title": "Tim Burton", "sentences": ["Tim Burton is a director."]},
        ],
    }


class TitleSearcher:
    """A title query finds its own three-sentence page (the Ed Wood text for any title)."""

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        pages = {"Tim Burton": "Tim Burton is a director. He made Ed Wood. He lives."}
        return [[_passage(q, pages.get(q, THREE))] for q in queries]


@pytest.mark.parametrize("budget", [1, 2, None])
def test_synthesis_and_inference_make_the_same_observation_bytes(budget: int | None) -> None:
    gold = gold_question(_gold_row(0), "hotpotqa")
    assert gold is not None
    (record,) = synthesize([gold], "sequential", TitleSearcher(), passage_sentences=budget)
    trained = [m["content"] for m in record["messages"]]
    # Inference: a policy whose card declares the budget, replaying the teacher's steps.
    policy = Declaring(script=trained[1::2], passage_sentences=budget)
    state = create_parallel_search_graph(policy, TitleSearcher(), decompose=False).invoke(
        {"question": gold.question}
    )
    served = [str(m.content) for m in state["transcript"]]
    observations = [m for m in trained[2::2] if "<information>" in m]
    assert len(observations) == 2
    assert [m.encode() for m in served] == [m.encode() for m in trained]
    assert ("He was born" in observations[0]) == (budget != 1)
    assert ("He died" in observations[0]) == (budget is None)


def test_synthesis_keeps_a_trajectory_only_if_the_budget_shows_its_supporting_sentence() -> None:
    gold = gold_question(_gold_row(1), "hotpotqa")  # the fact is Ed Wood's second sentence
    assert gold is not None and gold.marked == {"Ed Wood", "Tim Burton"}
    assert synthesize([gold], "sequential", TitleSearcher(), passage_sentences=1) == []
    assert len(synthesize([gold], "sequential", TitleSearcher(), passage_sentences=2)) == 1
    assert len(synthesize([gold], "sequential", TitleSearcher())) == 1
    # A row without marked sentences (IRCoT rows) keeps the title check only.
    unmarked = gold_question({**_gold_row(1), "supporting_facts": None}, "hotpotqa")
    assert unmarked is not None and unmarked.marked == frozenset()
    assert len(synthesize([unmarked], "sequential", TitleSearcher(), passage_sentences=1)) == 1


def test_the_adapter_card_declares_the_synthesis_budget() -> None:
    assert serving_keys({"passage_sentences": 2, "top_k": 3}) == {
        "prompt_style": "raw",
        "raw_prompt": "rules",
        "passage_sentences": 2,
    }
    assert serving_keys({})["passage_sentences"] is None


# The measurement


def test_budget_figures_on_a_toy_retrieval() -> None:
    found = [_passage(), _passage("Other", "Nothing. Here.")]
    golds = [
        GoldSentences(
            ("Ed Wood", "Missing"),
            (
                ("Ed Wood", 0, "Ed Wood was an American filmmaker."),
                ("Ed Wood", 2, " He died in 1978."),
            ),
        ),
        GoldSentences(("Other",)),
    ]
    figures = budget_figures([found, found[1:]], golds, lambda text: len(text.split()))
    one, whole = figures["1"], figures["all"]
    assert one["n"] == 2 and one["n_with_sentences"] == 1
    assert one["title_recall"] == whole["title_recall"] == 0.75  # (1/2 + 1/1) / 2
    assert one["sentence_recall"] == 0.5 and whole["sentence_recall"] == 1.0
    assert one["sentences_within_budget"] == 0.5 and figures["3"]["sentences_within_budget"] == 1.0
    # "Doc 1(Title: Ed Wood) Ed Wood was an American filmmaker." is 10 words, the Other line 4.
    assert one["tokens_per_passage"] == ((10 + 4) / 2 + 4) / 2
    assert one["tokens_per_query"] == (14 + 4) / 2
    assert (
        whole["tokens_per_passage"] > figures["2"]["tokens_per_passage"] > one["tokens_per_passage"]
    )


def test_gold_sentences_and_splitter_agreement_on_toy_rows() -> None:
    row = {"supporting_titles": ["A"], "supporting_facts": [["A", 1], ["A", 9], ["B", 0]]}
    gold = gold_sentences(row, {"A": ["X y.", " Z w."]})
    assert gold == GoldSentences(("A",), (("A", 1, " Z w."),))
    agreement = splitter_agreement(
        [
            ("Mr. X went. Then home.", ["Mr. X went.", " Then home."]),  # agrees
            ("Ends in Bros. Then more. Last.", ["Ends in Bros.", " Then more. Last."]),  # one extra
            ("Not covered.", ["Other."]),
        ]  # skipped
    )
    assert agreement["paragraphs"] == 2 and agreement["exact"] == 0.5
    assert agreement["boundary_precision"] == 0.8 and agreement["boundary_recall"] == 1.0
    assert agreement["same_cut"] == {"1": 1.0, "2": 0.5, "3": 1.0}


# The command line


def test_ask_passes_the_budget_and_auto_leaves_it_to_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_parallel.agent import run as agent_run
    from langgraph_parallel.agent.run import QuestionRun
    from langgraph_parallel.apps import registry
    from langgraph_parallel.apps.cli import main
    from langgraph_parallel.models import served
    from langgraph_parallel.retrieval import indexes

    built: list[dict[str, Any]] = []
    monkeypatch.setattr(served, "find_server", lambda *_: None)
    monkeypatch.setattr(registry, "load_model", lambda *_, **__: object())
    monkeypatch.setattr(registry, "build_graph", lambda *_, **kw: built.append(kw) or object())
    monkeypatch.setattr(indexes, "corpus_index", lambda *_, **__: object())
    run = QuestionRun("x", "answered", {}, 0.1, state={"answer": "x"})
    monkeypatch.setattr(agent_run, "run_question", lambda *_, **__: run)
    for flag, value in (
        (["--passage-sentences", "2"], 2),
        (["--passage-sentences", "all"], None),
        ([], "auto"),
    ):
        assert main(["ask", *flag, "Who?"]) == 0
        assert built[-1]["passage_sentences"] == value
    with pytest.raises(SystemExit):
        main(["ask", "--passage-sentences", "0", "Who?"])


def test_the_direct_baseline_ignores_the_budget() -> None:
    from langgraph_parallel.apps.registry import build_graph

    graph = build_graph(
        "direct", ScriptedChatModel(script=["<answer> 42 </answer>"]), None, passage_sentences=2
    )
    assert graph.invoke({"question": "q?"})["answer"] == "42"
