"""What a model declares (``agent/policy.py``): read from the card, never by starting an engine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from langgraph_parallel.agent.policy import PolicySpec, policy_of
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.engine import engine_defaults
from langgraph_parallel.models.served_chat import ChatVLLMServer
from langgraph_parallel.models.vllm_chat import ChatVLLM
from tests.fakes import ScriptedChatModel

PACKAGE = Path(__file__).resolve().parents[2] / "langgraph_parallel"
CAPABILITIES = {
    "style",
    "prompt_style",
    "prompt_kind",
    "raw_prompt",
    "regex",
    "passage_sentences",
    "logprobs",
    "worker",
    "reset_prefix_cache",
    "policy",
    "declared_policy",
}


def test_the_in_process_policy_declares_its_card_without_starting_an_engine() -> None:
    model = ChatVLLM(model="smollm2-parallel")
    spec = policy_of(model)
    assert spec.style == "raw" and spec.raw_prompt == "rules"
    assert spec.constrained_decoding and spec.logprobs and spec.in_process_engine
    assert spec.multi_sample  # n samples in one request (distinct branches draw so)
    # Its window is the engine's max_model_len, from the settings it will start with.
    assert spec.context_tokens == engine_defaults().get("max_model_len")
    assert (
        policy_of(ChatVLLM(model="smollm2", engine_kwargs={"max_model_len": 640})).context_tokens
        == 640
    )
    assert model._worker is None  # nothing started
    served = policy_of(ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model="smollm2-parallel"))
    # A served model's window is the server's: not declared, so refusals say it.
    assert served == PolicySpec(
        **{**spec.__dict__, "in_process_engine": False, "context_tokens": None}
    )
    # A base model without a card: chat defaults for a hub name, the field wins when set.
    assert policy_of(ChatVLLM(model="some/hub-model")).style == "chat"
    assert policy_of(ChatVLLM(model="some/hub-model", prompt_style="raw")).style == "raw"


def test_other_models_declare_by_a_spec_or_attributes_else_get_chat_defaults() -> None:
    plain = ScriptedChatModel(script=[])
    assert policy_of(plain) == PolicySpec()

    class Declared(ScriptedChatModel):
        policy: PolicySpec = PolicySpec(style="raw", passage_sentences=2)

    assert policy_of(Declared(script=[])).passage_sentences == 2

    class Attributes(ScriptedChatModel):
        prompt_style: str = "raw"
        raw_prompt: str = "rules"
        passage_sentences: int = 0

    with pytest.raises(UserError, match="passage_sentences=0"):
        policy_of(Attributes(script=[]))


def test_no_module_but_the_policy_probes_what_a_model_can_do() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "agent" / "policy.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in CAPABILITIES
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.args[1].value}")
    assert found == []
