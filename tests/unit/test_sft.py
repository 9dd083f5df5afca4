"""SFT data: gold plans from benchmark rows, the scripted teacher, transcripts and their masks."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_parallel.agent.step import raw_prompt_kind
from langgraph_parallel.apps.registry import DEFAULT_MODELS, GRAPH_NAMES, default_model
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.prompts import few_shot_prompt, rules_prompt
from langgraph_parallel.protocol import parse_action
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.rewards import RewardConfig, score_steps
from langgraph_parallel.train.encode import encode_transcript
from langgraph_parallel.train.gold import gold_question, gold_questions
from langgraph_parallel.train.questions import pick_questions
from langgraph_parallel.train.sft import SFTRunConfig
from langgraph_parallel.train.synth import (
    ScriptedTeacher,
    gold_steps,
    synthesize,
    valid_steps,
)
from tests.conftest import SHARED_DATA
from tests.fakes import ScriptedChatModel


def _row(qid: str, kind: str, facts: dict[str, list[str]], **extra: Any) -> dict[str, Any]:
    context = [{"title": t, "sentences": s} for t, s in facts.items()]
    context.append({"title": "Distractor", "sentences": ["Nothing to see."]})
    return {
        "id": qid,
        "question": extra.pop("question", f"Question {qid}?"),
        "answer": extra.pop("answer", "yes"),
        "type": kind,
        "supporting_titles": list(facts),
        "supporting_facts": [[t, 0] for t in facts],
        "context": context,
        **extra,
    }


COMPARISON = _row(
    "c1",
    "comparison",
    {"Ed Wood": ["Ed Wood was an American filmmaker."], "Scott Derrickson": ["He is American."]},
    question="Were Scott Derrickson and Ed Wood of the same nationality?",
)
# The second title is named in the first's supporting sentence, so it comes second whatever
# order the row lists them in.
BRIDGE = _row(
    "b1",
    "bridge",
    {
        "Kiss and Tell (1945 film)": ["Corliss Archer was played by Shirley Temple."],
        "Shirley Temple": ["Shirley Temple was Chief of Protocol of the United States."],
    },
    question="What government position was held by the woman who portrayed Corliss Archer?",
    answer="Chief of Protocol",
)
BRIDGE_REVERSED = {
    **BRIDGE,
    "id": "b2",
    "supporting_titles": list(reversed(BRIDGE["supporting_titles"])),
}


class RawScripted(ScriptedChatModel):
    """A scripted model prompted like the embedded ones (raw completion)."""

    style: str = "raw"
    raw_prompt: str | None = None


class TitleSearcher:
    """Returns a passage titled as the query (a title query finds its page), except ``missing``."""

    def __init__(self, missing: Sequence[str] = ()) -> None:
        self.missing = set(missing)
        self.queries: list[str] = []

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        self.queries.extend(queries)
        return [
            [Passage(id=q, title="Other" if q in self.missing else q, text=f"About {q}.")]
            for q in queries
        ]


def test_comparison_plan_searches_both_entities_in_one_level() -> None:
    gold = gold_question(COMPARISON, "hotpotqa")
    assert gold is not None
    assert gold.question_class == "parallelizable"
    assert gold.hops == (("Ed Wood", "Scott Derrickson"),)
    assert gold.turns("parallel") == [["Ed Wood", "Scott Derrickson"]]
    assert gold.turns("sequential") == [["Ed Wood"], ["Scott Derrickson"]]
    assert gold.facts["Ed Wood"] == ("Ed Wood was an American filmmaker.",)


@pytest.mark.parametrize("row", [BRIDGE, BRIDGE_REVERSED])
def test_bridge_plan_puts_the_revealed_title_second(row: dict[str, Any]) -> None:
    gold = gold_question(row, "hotpotqa")
    assert gold is not None
    assert gold.question_class == "sequential"
    assert gold.hops == (("Kiss and Tell (1945 film)",), ("Shirley Temple",))
    # A chain is sequential under both policies: nothing can be searched at once.
    assert gold.turns("parallel") == gold.turns("sequential")


def test_2wiki_bridge_comparison_has_two_levels_and_chains_follow_evidences() -> None:
    facts = {t: [f"{t} fact."] for t in ("Film A", "Film B", "Director A", "Director B")}
    gold = gold_question(_row("w1", "bridge_comparison", facts), "2wikimultihopqa")
    assert gold is not None
    assert gold.hops == (("Film A", "Film B"), ("Director A", "Director B"))
    chain = _row(
        "w2",
        "compositional",
        {"Son": ["Son's father is Dad."], "Dad": ["Dad was born in Paris."]},
        evidences=[["Dad", "place of birth", "Paris"], ["Son", "father", "Dad"]],
    )
    gold = gold_question(chain, "2wikimultihopqa")
    assert gold is not None and gold.hops == (("Dad",), ("Son",))


def test_musique_plan_follows_question_decomposition() -> None:
    row = _row("m1", "2hop", {"P0": ["zero"], "P1": ["one"]})
    row["question_decomposition"] = [
        {"question": "q1", "paragraph_support_idx": 1},
        {"question": "q2", "paragraph_support_idx": 0},
    ]
    gold = gold_question(row, "musique")
    assert gold is not None and gold.hops == (("P1",), ("P0",))
    row["question_decomposition"][1]["paragraph_support_idx"] = 99
    assert gold_question(row, "musique") is None


def test_rows_without_a_plan_are_skipped() -> None:
    one_title = _row("x", "comparison", {"Only": ["one title"]})
    assert gold_question(one_title, "hotpotqa") is None
    assert gold_question({**COMPARISON, "supporting_facts": []}, "hotpotqa") is not None
    unknown = gold_question(COMPARISON, "nq")
    assert unknown is None


def test_gold_steps_fit_the_grammar_and_decompose_only_in_the_parallel_policy() -> None:
    comparison = gold_question(COMPARISON, "hotpotqa")
    bridge = gold_question(BRIDGE, "hotpotqa")
    assert comparison is not None and bridge is not None
    parallel = gold_steps(comparison, "parallel")
    sequential = gold_steps(comparison, "sequential")
    assert valid_steps(parallel, decompose=True)
    assert valid_steps(sequential, decompose=False)
    assert not valid_steps(parallel, decompose=False)  # '##' is outside Search-R1's grammar
    first = parse_action(parallel[0])
    assert first.kind == "search" and list(first.queries) == ["Ed Wood", "Scott Derrickson"]
    assert [parse_action(s).kind for s in parallel] == ["search", "answer"]
    assert [parse_action(s).kind for s in sequential] == ["search", "search", "answer"]
    assert parse_action(parallel[-1]).answer == "yes"
    steps = gold_steps(bridge, "parallel")
    assert [list(parse_action(s).queries) for s in steps[:2]] == [
        ["Kiss and Tell (1945 film)"],
        ["Shirley Temple"],
    ]
    # The last think keeps the sentence the answer comes from.
    assert "Chief of Protocol" in steps[-1]


def test_long_facts_are_shortened_to_the_think_budget() -> None:
    long = _row("l", "comparison", {"A": ["word " * 200], "B": ["<b> tag " * 100]})
    gold = gold_question(long, "hotpotqa")
    assert gold is not None
    for policy in ("parallel", "sequential"):
        steps = gold_steps(gold, policy)  # type: ignore[arg-type]
        assert valid_steps(steps, decompose=policy == "parallel")


def test_synthesized_transcript_is_exactly_what_the_graph_renders() -> None:
    golds = [g for g in (gold_question(r, "hotpotqa") for r in (COMPARISON, BRIDGE)) if g]
    search = TitleSearcher()
    records = synthesize(golds, "parallel", search)
    assert [r["id"] for r in records] == ["c1", "b1"]
    first = records[0]
    assert first["question_class"] == "parallelizable"
    messages = first["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0]["content"] == rules_prompt(COMPARISON["question"], decompose=True)
    assert [m["content"] for m in messages[1::2]] == gold_steps(golds[0], "parallel")
    # Replaying the steps through the graph on another model gives the same bytes: the training
    # text is the inference text.
    replay = RawScripted(script=[m["content"] for m in messages[1::2]], raw_prompt="rules")
    graph = create_parallel_search_graph(replay, TitleSearcher(), decompose=True)
    state = graph.invoke({"question": COMPARISON["question"]})
    assert [str(m.content) for m in state["transcript"]] == [m["content"] for m in messages]
    assert "Ed Wood" in search.queries and "Scott Derrickson" in search.queries


def test_synthesis_drops_a_trajectory_whose_gold_paragraph_was_not_retrieved() -> None:
    gold = gold_question(COMPARISON, "hotpotqa")
    assert gold is not None
    assert synthesize([gold], "sequential", TitleSearcher(missing=["Ed Wood"])) == []
    kept = synthesize([gold], "sequential", TitleSearcher())
    assert len(kept) == 1
    assert "##" not in "".join(m["content"] for m in kept[0]["messages"][1::2])
    assert kept[0]["messages"][0]["content"] == rules_prompt(gold.question, decompose=False)


def test_the_final_answer_step_leaves_synthesised_transcripts_as_they_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A teacher's plan ends with its answer within max_turns, so the step after a search at
    # the last turn never comes up: the same records with it on (the default) or off, also
    # for plans exactly max_turns long (here every plan has 2 or 3 steps).
    import functools

    from langgraph_parallel.train import synth

    golds = [g for g in (gold_question(r, "hotpotqa") for r in (COMPARISON, BRIDGE)) if g]
    for policy, max_turns, kept in [("parallel", 2, 1), ("parallel", 3, 2), ("sequential", 3, 2)]:
        with_step = synthesize(golds, policy, TitleSearcher(), max_turns=max_turns)
        with monkeypatch.context() as patch:
            old = functools.partial(create_parallel_search_graph, final_answer_step=False)
            patch.setattr(synth, "create_parallel_search_graph", old)
            without = synthesize(golds, policy, TitleSearcher(), max_turns=max_turns)
        assert with_step == without and len(with_step) == kept


def test_synthesis_skips_plans_longer_than_max_turns() -> None:
    gold = gold_question(COMPARISON, "hotpotqa")
    assert gold is not None
    assert synthesize([gold], "sequential", TitleSearcher(), max_turns=2) == []
    assert len(synthesize([gold], "parallel", TitleSearcher(), max_turns=2)) == 1


class OffsetTokenizer:
    """Splits on spaces, keeping the space with the next word (like BPE), with offsets."""

    def __call__(self, text: str, return_offsets_mapping: bool = False) -> dict[str, Any]:
        spans, start = [], 0
        for i in range(1, len(text) + 1):
            if i == len(text) or text[i] == " ":
                spans.append((start, i))
                start = i
        return {"input_ids": [hash(text[a:b]) % 1000 for a, b in spans], "offset_mapping": spans}


def test_encode_transcript_masks_only_the_models_steps() -> None:
    messages = [
        {"role": "user", "content": "Q one"},
        {"role": "assistant", "content": " A two"},
        {"role": "user", "content": " obs three"},
        {"role": "assistant", "content": " B"},
    ]
    ids, mask = encode_transcript(messages, OffsetTokenizer())
    # Tokens: "Q", " one", " A", " two", " obs", " three", " B".
    assert len(ids) == 7
    assert mask == [0, 0, 1, 1, 0, 0, 1]


MAGAZINES = _row(
    "m1",
    "comparison",
    {"Arthur's Magazine": ["Started in 1844."], "First for Women": ["Started in 1989."]},
    question="Which magazine was started first, Arthur's Magazine or First for Women?",
    answer="Arthur's Magazine",
)


def test_pick_questions_balances_classes_and_drops_held_out_ids(tmp_path: Path) -> None:
    rows = [{**MAGAZINES, "id": f"c{i}"} for i in range(5)]
    rows += [{**BRIDGE, "id": f"b{i}"} for i in range(3)]
    data = tmp_path / "hotpotqa_train.jsonl.gz"
    with gzip.open(data, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    held = tmp_path / "held.jsonl"
    held.write_text(json.dumps({"id": "c0"}) + "\n" + json.dumps({"id": "b0"}) + "\n")
    config = SFTRunConfig(datasets=(str(data),), out=str(tmp_path), exclude=(str(held),))
    picked = pick_questions(SFTRunConfig(**{**config.__dict__, "per_class": 2}))
    ids = sorted(g.id for g in picked)
    assert len(ids) == 4 and "c0" not in ids and "b0" not in ids
    assert sum(g.question_class == "parallelizable" for g in picked) == 2
    everything = pick_questions(SFTRunConfig(**{**config.__dict__, "per_class": None}))
    assert len(everything) == 6
    with pytest.raises(UserError, match="--policies"):
        SFTRunConfig(out="o", policies=("both",))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="--micro-batch"):
        SFTRunConfig(out="o", batch_size=3, micro_batch=2)


def test_no_training_question_names_the_readme_questions_people(tmp_path: Path) -> None:
    about_ed_wood = _row(
        "e1",
        "bridge",
        {"Beyond Rangoon": ["A film."], "Patricia Arquette": ["An actress."]},
        question='Which actress in "Beyond Rangoon" was also in "Ed Wood"?',
    )
    data = tmp_path / "hotpotqa_train.jsonl.gz"
    with gzip.open(data, "wt") as f:
        for row in (COMPARISON, about_ed_wood, MAGAZINES, BRIDGE):
            f.write(json.dumps(row) + "\n")
    config = SFTRunConfig(datasets=(str(data),), out=str(tmp_path), exclude=(), per_class=None)
    assert sorted(g.id for g in pick_questions(config)) == ["b1", "m1"]


def test_one_policy_trains_on_the_questions_both_policies_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from langgraph_parallel.train import sft as sft_module
    from langgraph_parallel.train import synth

    kept = {"parallel": ["a", "b"], "sequential": ["b", "c"]}
    monkeypatch.setattr(sft_module, "searcher_for", lambda config, golds: TitleSearcher())
    monkeypatch.setattr(
        synth,
        "synthesize",
        lambda golds, policy, search, **kw: [{"id": i, "policy": policy} for i in kept[policy]],
    )
    config = SFTRunConfig(out=str(tmp_path), policies=("sequential",))
    # Both policies' trajectories of the common question: the other one can train later.
    assert sft_module.synthesize_all(config, []) == [
        {"id": "b", "policy": "parallel"},
        {"id": "b", "policy": "sequential"},
    ]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data")
def test_real_hotpotqa_rows_give_plans_of_both_classes() -> None:
    golds = list(gold_questions(SHARED_DATA / "hotpotqa_dev_distractor_subset.jsonl.gz"))
    classes = {g.question_class for g in golds}
    assert classes == {"parallelizable", "sequential"}
    assert len(golds) > 200
    assert all(valid_steps(gold_steps(g, "parallel"), True) for g in golds[:50])


def test_require_answer_pays_decomposition_only_to_answered_responses() -> None:
    unanswered = ["<think> t </think>\n<search> a ## b </search>"]
    answered = [*unanswered, "<think> t </think>\n<answer> x </answer>"]
    loose = score_steps(unanswered, ["x"], "parallelizable")
    strict = score_steps(unanswered, ["x"], "parallelizable", RewardConfig(require_answer=True))
    assert loose.decomposition > 0 and loose.search_count > 0
    assert strict.decomposition == 0 and strict.search_count == 0
    paid = score_steps(answered, ["x"], "parallelizable", RewardConfig(require_answer=True))
    assert paid.decomposition == loose.decomposition and paid.correct


def test_rules_prompt_is_the_few_shot_prompt_without_demos() -> None:
    rules = rules_prompt(" Who? ", decompose=True)
    assert rules.endswith("\nQuestion: Who?\n") and "##" in rules
    assert len(rules) < len(few_shot_prompt("Who?", decompose=True)) / 2
    assert "##" not in rules_prompt("Who?", decompose=False)


def test_trained_policies_get_the_rules_prompt_in_the_graph() -> None:
    assert raw_prompt_kind(ScriptedTeacher(steps=[])) == "rules"
    plain = RawScripted(script=["<think> t </think>\n<answer> a </answer>"])
    assert raw_prompt_kind(plain) == "few_shot"
    create_parallel_search_graph(plain, TitleSearcher()).invoke({"question": "Who?"})
    prompt = plain.calls[0][0]
    assert isinstance(prompt, HumanMessage)
    assert prompt.content == few_shot_prompt("Who?", decompose=True)


def test_every_graph_has_a_default_model() -> None:
    assert set(DEFAULT_MODELS) == set(GRAPH_NAMES)
    assert default_model("parallel-search") == "smollm2-parallel"
    assert default_model("sequential") == "smollm2-sequential"
    assert default_model("direct") == "smollm2"


def test_context_corpus_dedupes_titles_and_is_named_by_content(tmp_path: Path) -> None:
    from langgraph_parallel.eval.contexts import context_corpus
    from langgraph_parallel.retrieval.corpus import load_corpus

    first = context_corpus([{"A": "a text", "B": "b text"}, {"A": "other", "C": ""}], tmp_path)
    again = context_corpus([{"B": "b text"}, {"A": "a text"}], tmp_path)
    assert first == again  # same paragraphs, same file (and the same embedding cache)
    assert [(p.title, p.text) for p in load_corpus(first)] == [("A", "a text"), ("B", "b text")]
    assert context_corpus([{"A": "changed"}], tmp_path) != first


def test_train_sft_command_builds_the_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    import langgraph_parallel.train.sft as sft_module
    from langgraph_parallel.apps.cli import main

    seen: list[SFTRunConfig] = []
    monkeypatch.setattr(sft_module, "sft", lambda config, command: seen.append(config) or {})
    argv = ["train", "sft", "--out", "o", "--policies", "parallel, sequential", "--per-class", "0"]
    assert main(argv) == 0
    (config,) = seen
    assert config.policies == ("parallel", "sequential") and config.per_class is None
    assert config.datasets[0].endswith("hotpotqa_dev_distractor_subset.jsonl.gz")
    assert config.exclude[0].endswith("hotpotqa_dev_sample300.jsonl.gz")
    assert main([*argv, "--exclude", "none", "--dataset", "x.jsonl"]) == 0
    assert seen[1].exclude == () and seen[1].datasets == ("x.jsonl",)
    assert seen[0].init is None
    assert main([*argv, "--init", "smollm2-parallel"]) == 0 and seen[2].init == "smollm2-parallel"
    assert main(["train", "sft", "--out", "o", "--policies", "both"]) == 2  # a clear error


def test_train_grpo_starts_from_the_parallel_policy_with_gated_balanced_rewards(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import langgraph_parallel.train.grpo as grpo
    from langgraph_parallel.apps.cli import main

    seen: list[Any] = []
    monkeypatch.setattr(grpo, "train", lambda config, command: seen.append(config) or tmp_path)
    assert main(["train", "grpo", "--dataset", "d.jsonl", "--out", "o"]) == 0
    assert main(["train", "grpo", "--dataset", "d", "--out", "o", "--no-gate", "--unbalanced"]) == 0
    assert main(["train", "grpo", "--dataset", "d", "--out", "o", "--gold-mix"]) == 0
    gated, loose, mixed = seen
    assert gated.model == "smollm2-parallel" and gated.balanced and gated.reward.require_answer
    assert not loose.balanced and not loose.reward.require_answer
    assert mixed.gold_mix and not gated.gold_mix


def test_grpo_questions_alternate_classes_and_skip_held_out(tmp_path: Path) -> None:
    from langgraph_parallel.train.grpo import TrainConfig, training_questions

    other = {"question": "Were Ang Lee and Jet Li of the same nationality?"}
    other["supporting_titles"] = ["Ang Lee", "Jet Li"]
    rows = [{**COMPARISON, **other, "id": f"c{i}"} for i in range(2)]
    rows += [{**BRIDGE, "id": f"b{i}"} for i in range(5)]
    rows.append({**COMPARISON, "id": "readme"})  # about the README question's people: never
    data = tmp_path / "hotpotqa_train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    held = tmp_path / "held.jsonl"
    held.write_text(json.dumps({**BRIDGE, "id": "b4"}) + "\n")
    config = TrainConfig(dataset=str(data), out=str(tmp_path), exclude=str(held))
    classes = [q.question_class for q in training_questions(config)]
    assert classes == ["parallelizable", "sequential"] * 2
    loose = TrainConfig(dataset=str(data), out=str(tmp_path), exclude=str(held), balanced=False)
    assert sorted(q.id for q in training_questions(loose)) == ["b0", "b1", "b2", "b3", "c0", "c1"]
    dev = tmp_path / "dev.jsonl"  # the dev split is held out too
    dev.write_text(json.dumps({**BRIDGE, "id": "b3"}) + "\n")
    with_dev = TrainConfig(
        dataset=str(data), out=str(tmp_path), exclude=str(held), dev=str(dev), balanced=False
    )
    assert "b3" not in {q.id for q in training_questions(with_dev)}


def test_grpo_pools_several_question_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from langgraph_parallel.apps.cli import main
    from langgraph_parallel.train.grpo import TrainConfig, training_questions

    first, second = tmp_path / "hotpotqa_a.jsonl", tmp_path / "hotpotqa_b.jsonl"
    first.write_text("".join(json.dumps({**BRIDGE, "id": f"b{i}"}) + "\n" for i in range(3)))
    other = {"question": "Were Ang Lee and Jet Li of the same nationality?"}
    other["supporting_titles"] = ["Ang Lee", "Jet Li"]
    second.write_text(
        "".join(json.dumps({**COMPARISON, **other, "id": f"p{i}"}) + "\n" for i in range(3))
    )
    files = (str(first), str(second))
    config = TrainConfig(dataset=files, out=str(tmp_path), exclude=None, balanced=False)
    pooled = [q.id for q in training_questions(config)]
    assert sorted(pooled) == ["b0", "b1", "b2", "p0", "p1", "p2"]
    assert pooled == [q.id for q in training_questions(config)]  # the seed fixes the order
    # One file keeps the order it always had (a chain's questions hash must not change).
    alone = TrainConfig(dataset=str(first), out=str(tmp_path), exclude=None, balanced=False)
    assert training_questions(alone) == training_questions(
        TrainConfig(dataset=(str(first),), out=str(tmp_path), exclude=None, balanced=False)
    )
    # --dataset repeats on the command line.
    import langgraph_parallel.train.grpo as grpo

    seen: list[Any] = []
    monkeypatch.setattr(grpo, "train", lambda config, command: seen.append(config) or tmp_path)
    argv = ["train", "grpo", "--dataset", files[0], "--dataset", files[1], "--out", "o"]
    assert main(argv) == 0
    assert seen[0].dataset_files == files


def test_portable_path_names_checkout_files_relative_and_keeps_others(tmp_path: Path) -> None:
    from langgraph_parallel.paths import portable_path, repo_data_dir

    assert portable_path(repo_data_dir() / "x.jsonl") == "data/x.jsonl"
    assert portable_path(repo_data_dir().parent.parent / "shared" / "d") == "../shared/d"
    outside = Path("/") / "opt-nowhere" / "f.jsonl"
    assert portable_path(outside) == str(outside)


def test_init_must_be_a_trained_adapter_of_the_policy_being_trained(tmp_path: Path) -> None:
    from langgraph_parallel.errors import UserError
    from langgraph_parallel.train.sft import check_init

    check_init(SFTRunConfig(out="o", init="smollm2-parallel", policies=("parallel",)))
    with pytest.raises(UserError, match="not a trained adapter.*--model"):
        check_init(SFTRunConfig(out="o", init="smollm2", policies=("parallel",)))
    with pytest.raises(UserError, match="--policies parallel"):
        check_init(SFTRunConfig(out="o", init="smollm2-parallel", policies=("sequential",)))
    with pytest.raises(UserError, match="--policies sequential"):
        check_init(SFTRunConfig(out="o", init="smollm2-sequential"))  # both policies asked
