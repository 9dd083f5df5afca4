"""The vLLM plugin's CPU fixes for sampling under speculative decoding."""

from __future__ import annotations

import os

import pytest

from langgraph_parallel.models import vllm_plugin

torch = pytest.importorskip("torch")


def reference(values: list[float], counts: list[int], replace_from: float, replace_to: float):
    out: list[float] = []
    for value, count in zip(values, counts, strict=True):
        out += [replace_to if value == replace_from else value] * count
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.int64])
def test_each_request_value_is_repeated_for_each_of_its_tokens(dtype):
    values, counts = [0.0, 0.6, 3.0, 0.0], [2, 0, 3, 1]
    x = torch.tensor(values).to(dtype)
    cu = torch.tensor(counts, dtype=torch.int32).cumsum(0).to(torch.int32)
    got = vllm_plugin.expand_batch_to_tokens(x, cu, sum(counts), replace_from=0, replace_to=1)
    assert got.dtype == dtype
    expected = reference(x.tolist(), counts, 0, 1)
    assert got.tolist() == pytest.approx(expected)


def test_a_step_without_drafts_expands_to_nothing():
    got = vllm_plugin.expand_batch_to_tokens(torch.tensor([0.7]), torch.tensor([0]), 0)
    assert got.shape == (0,)


def test_zero_rows_are_returned_without_calling_the_constraint():
    calls = []

    def apply(logits, cu, meta):
        calls.append(logits.shape[0])
        return logits * 2

    wrapped = vllm_plugin.skip_empty(apply)
    assert vllm_plugin.skip_empty(wrapped) is wrapped
    empty = torch.zeros((0, 5))
    assert wrapped(empty, None, None) is empty
    assert wrapped(torch.ones((1, 5)), None, None).tolist() == [[2.0] * 5]
    assert calls == [1]


def test_registered_on_this_cpu_vllm_scales_draft_logits_by_each_request_temperature():
    rejection_sampler = pytest.importorskip("vllm.v1.sample.rejection_sampler")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("the fix applies to vLLM's CPU build")
    current_platform.register_triton_kernel_overrides()
    vllm_plugin.register()

    class Meta:  # the fields apply_sampling_constraints reads
        all_greedy = False
        temperature = torch.tensor([0.5, 0.0])  # a sampled and a greedy request
        top_k = None
        top_p = torch.tensor([1.0, 1.0])

    logits = torch.tensor([[1.0, 2.0]] * 3)  # two draft rows of request 0, one of request 1
    cu = torch.tensor([2, 3], dtype=torch.int32)
    out = rejection_sampler.apply_sampling_constraints(logits.clone(), cu, Meta())
    assert out.tolist() == [[2.0, 4.0], [2.0, 4.0], [1.0, 2.0]]


def test_uncompiled_unwraps_torch_compile_and_leaves_other_functions():
    def count(x, values):
        return (x >= values).sum(-1)

    assert vllm_plugin.uncompiled(torch.compile(count)) is count
    assert vllm_plugin.uncompiled(count) is count


def test_registered_on_this_cpu_vllm_the_sampler_ranks_tokens_without_a_compile():
    sampler = pytest.importorskip("vllm.v1.sample.sampler")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("the fix applies to vLLM's CPU build")
    vllm_plugin.register()
    vllm_plugin.register()  # vLLM may load a plugin twice in one process
    rank = sampler.batched_count_greater_than
    assert not hasattr(rank, "_torchdynamo_orig_callable")
    logprobs = torch.tensor([[-0.1, -2.0, -0.5, -3.0], [-1.0, -0.2, -0.2, -4.0]])
    sampled = torch.tensor([[-0.5], [-0.2]])
    assert rank(logprobs, sampled).tolist() == [2, 2]  # ties count: rank 1 is the best


def test_a_cpu_generator_gets_an_offset_free_twin_that_draws_the_same_numbers():
    generator = torch.Generator(device="cpu").manual_seed(7)
    twin = vllm_plugin.offset_free(generator)
    assert twin is not generator and vllm_plugin.offset_free(twin) is twin
    assert vllm_plugin.offset_free(None) is None
    twin.set_offset(twin.get_offset() - 4)  # vLLM's rewind after a partial prefill
    assert torch.equal(torch.rand(5, generator=twin), torch.rand(5, generator=generator))


def test_a_request_enters_the_batch_with_an_offset_free_generator():
    class Request:
        generator = torch.Generator(device="cpu").manual_seed(1)

    seen = []
    add = vllm_plugin.seeds_without_offsets(lambda batch, request: seen.append(request.generator))
    assert vllm_plugin.seeds_without_offsets(add) is add
    add(None, Request())
    assert isinstance(seen[0], vllm_plugin.offset_free_generator())


def test_this_install_declares_the_plugin_to_vllm(monkeypatch):
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    assert vllm_plugin.installed()
    monkeypatch.setenv("VLLM_PLUGINS", "lora_filesystem_resolver")  # an allow-list without it
    assert not vllm_plugin.installed()
    monkeypatch.setenv("VLLM_PLUGINS", "lora_filesystem_resolver,langgraph_parallel_cpu_sampling")
    assert vllm_plugin.installed()


def test_vllm_loading_the_plugin_does_not_load_the_graphs():
    import subprocess
    import sys

    # vLLM imports the plugin into each of its processes; the package's names load on use.
    code = (
        "import sys, langgraph_parallel.models.vllm_plugin as p; "
        "assert 'langgraph' not in sys.modules, 'graphs loaded'; "
        "import langgraph_parallel as lp; "
        "assert all(getattr(lp, name) for name in lp.__all__); "
        "assert 'langgraph' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _exit_of(name: str) -> None:
    import atexit
    import gc
    import sys

    vllm_plugin.freeze_heap_at_exit()
    vllm_plugin.freeze_heap_at_exit()  # vLLM may load a plugin twice in one process
    atexit._run_exitfuncs()
    sys.exit(10 + min(gc.get_freeze_count(), 1))


@pytest.mark.parametrize(("name", "frozen"), [("EngineCore_DP0", True), ("MainProcess", False)])
def test_only_the_engine_core_freezes_its_heap_at_exit(name, frozen):
    import multiprocessing

    # The core's last collection outlasted vLLM's shutdown grace (the core was killed at 5 s).
    process = multiprocessing.get_context("spawn").Process(target=_exit_of, args=(name,), name=name)
    process.start()
    process.join(60)
    assert process.exitcode == (11 if frozen else 10)


def _ngram_cache_kinds() -> list[str]:
    from vllm.v1.spec_decode import ngram_proposer

    functions = (
        ngram_proposer.batch_propose_numba,
        ngram_proposer._find_longest_matched_ngram_and_propose_tokens,
    )
    return sorted({type(f._cache).__name__ for f in functions})


def _forked_core(out: str) -> None:
    import json

    from vllm.platforms import current_platform

    # What vLLM's worker runs in a forked core: the plugins are loaded already (in the parent),
    # so only the platform's kernel overrides run here.
    current_platform.register_triton_kernel_overrides()
    with open(out, "w") as file:
        json.dump(_ngram_cache_kinds(), file)


def _plugin_in(name: str, fork: str, out: str) -> None:
    import json
    import multiprocessing
    import os

    from vllm.platforms import current_platform

    if fork:
        os.environ[vllm_plugin.FORK_CORE_ENV] = fork
    vllm_plugin.register()
    vllm_plugin.register()  # vLLM may load a plugin twice in one process
    check = type(current_platform).check_and_update_config
    seen: dict[str, object] = {"forks_core": getattr(check, "_forks_core", False)}
    if name == "MainProcess":  # a user's process, which forks its engine core (models.engine)
        core = multiprocessing.get_context("fork").Process(
            target=_forked_core, args=(out + ".core",), name="EngineCore_DP0"
        )
        core.start()
        core.join(120)
        with open(out + ".core") as file:
            seen["forked_core"] = json.load(file)
    # What vLLM's worker does right after loading the plugins: its kernel scan, then our cache
    # (numba, imported before that scan, breaks it).
    current_platform.register_triton_kernel_overrides()
    seen["ngram"] = _ngram_cache_kinds()
    with open(out, "w") as file:
        json.dump(seen, file)


@pytest.mark.parametrize(
    ("name", "fork", "expected"),
    [
        ("EngineCore_DP0", "1", {"forks_core": True, "ngram": ["FunctionCache"]}),
        (
            "MainProcess",
            "",
            {"forks_core": False, "forked_core": ["FunctionCache"], "ngram": ["NullCache"]},
        ),
    ],
)
def test_engine_cores_alone_cache_the_ngram_compile_and_a_server_that_asks_alone_forks(
    name, fork, expected, tmp_path
):
    import json
    import multiprocessing

    # vLLM compiles the proposer without numba's disk cache in every new core (3.2-3.4 s of a
    # first request), spawned or forked from a user's process. The plugin reaches every vLLM
    # process of the environment, a user's own included, so only a server started with the
    # variable gets its core forked.
    out = str(tmp_path / "seen.json")
    process = multiprocessing.get_context("spawn").Process(
        target=_plugin_in, args=(name, fork, out), name=name
    )
    process.start()
    process.join(240)
    assert process.exitcode == 0
    assert json.loads((tmp_path / "seen.json").read_text()) == expected


def test_then_fork_the_core_asks_for_fork_after_the_platforms_check(monkeypatch):
    seen = []

    def check(config):
        seen.append(config)
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"  # as vLLM's CPU platform does

    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    wrapped = vllm_plugin.then_fork_the_core(check)
    assert vllm_plugin.then_fork_the_core(wrapped) is wrapped
    wrapped("config")
    assert seen == ["config"] and os.environ["VLLM_WORKER_MULTIPROC_METHOD"] == "fork"


def test_servers_ask_for_a_forked_core_unless_the_user_chose_a_start_method(monkeypatch):
    from langgraph_parallel.models import engine, server

    monkeypatch.setattr(engine, "_START_METHOD_CHOSEN", None)
    env = server.server_environment(VLLM_API_KEY="k")
    assert env[vllm_plugin.FORK_CORE_ENV] == "1" and env["VLLM_API_KEY"] == "k"
    monkeypatch.setattr(engine, "_START_METHOD_CHOSEN", "spawn")
    monkeypatch.delenv(vllm_plugin.FORK_CORE_ENV, raising=False)
    assert vllm_plugin.FORK_CORE_ENV not in server.server_environment()
