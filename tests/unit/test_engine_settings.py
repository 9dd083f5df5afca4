"""Engine settings: the CPU defaults and LANGGRAPH_PARALLEL_ENGINE, read by every command."""

from __future__ import annotations

import json

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.models import cpu, engine


def test_the_environment_variable_updates_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CPU_ENGINE_DEFAULTS", {"enforce_eager": True, "block_size": 32})
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.setattr("langgraph_parallel.models.cpu.cpu_has_native_bf16", lambda: True)
    monkeypatch.delenv("LANGGRAPH_PARALLEL_ENGINE", raising=False)
    assert engine.engine_defaults() == {
        "enforce_eager": True,
        "block_size": 32,
        "dtype": "bfloat16",
    }
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", '{"enforce_eager": false, "dtype": "float32"}')
    assert engine.engine_defaults() == {
        "enforce_eager": False,
        "block_size": 32,
        "dtype": "float32",
    }
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)  # a GPU: no CPU defaults
    assert engine.engine_defaults() == {"enforce_eager": False, "dtype": "float32"}


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "dtype"),
    [
        (False, False, "float32"),  # AVX2 only, or AVX-512 without its bf16 extension
        (True, False, "bfloat16"),  # AVX-512 BF16 (e.g. AMD Zen 4, Intel Cooper Lake)
        (False, True, "bfloat16"),  # AMX tiles (Intel Sapphire Rapids and later)
        (True, True, "bfloat16"),
    ],
)
def test_the_cpu_engine_runs_in_bfloat16_only_where_the_cpu_computes_it(
    monkeypatch: pytest.MonkeyPatch, avx512_bf16: bool, amx: bool, dtype: str
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.delenv("LANGGRAPH_PARALLEL_ENGINE", raising=False)
    monkeypatch.setattr("torch.cpu._is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr("torch.cpu._is_amx_tile_supported", lambda: amx, raising=False)
    assert cpu.cpu_dtype() == dtype
    assert engine.engine_defaults()["dtype"] == dtype
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", '{"dtype": "bfloat16"}')  # a user's choice wins
    assert engine.engine_defaults()["dtype"] == "bfloat16"


def test_a_bad_value_names_the_variable_and_an_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", "enforce_eager=false")
    with pytest.raises(UserError, match=r"LANGGRAPH_PARALLEL_ENGINE must be a JSON object.*e\.g\."):
        engine.engine_defaults()


def test_serve_passes_every_engine_setting_as_a_vllm_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_parallel.models.server import server_command

    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.setenv("LANGGRAPH_PARALLEL_ENGINE", '{"block_size": 64}')
    spec = {"method": "ngram", "num_speculative_tokens": 8}
    monkeypatch.setattr(
        engine, "CPU_ENGINE_DEFAULTS", {"enforce_eager": True, "speculative_config": spec}
    )
    command = server_command("org/some-model", engine_kwargs={"max_model_len": None})
    assert command[command.index("--model") + 1] == "org/some-model"
    assert "--enforce-eager" in command and "--max-model-len" not in command
    assert command[command.index("--block-size") + 1] == "64"
    # vLLM parses a dict-valued flag as JSON (a Python repr would be refused).
    assert json.loads(command[command.index("--speculative-config") + 1]) == spec


def test_llvmlite_no_longer_breaks_vllms_module_scan() -> None:
    ffi = pytest.importorskip("llvmlite.binding.ffi")
    dispatcher = pytest.importorskip("vllm.triton_utils.dispatcher")
    engine._tolerate_llvmlite()
    engine._tolerate_llvmlite()  # a second call wraps nothing twice
    assert not hasattr(ffi.lib, "__dict__")
    assert ffi.lib.LLVMPY_GetVersionInfo() > 0  # the C functions still answer
    # The scan an engine start runs over every module (it failed on ffi.lib before).
    dispatcher._rebind_kernels([])
