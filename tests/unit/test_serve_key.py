"""``serve`` binds beyond this machine only with an API key, and clients send the key."""

from __future__ import annotations

import pytest

from langgraph_parallel.apps.cli import main, serve_key
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.served_chat import API_KEY_ENV, ChatVLLMServer, client_api_key


def test_a_local_host_needs_no_key_and_any_other_one_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    assert serve_key("127.0.0.1", None) is None and serve_key("localhost", None) is None
    for host in ("0.0.0.0", "::", "192.168.1.5"):
        with pytest.raises(UserError, match="--api-key KEY"):
            serve_key(host, None)
    assert serve_key("0.0.0.0", "k1") == "k1"
    monkeypatch.setenv(API_KEY_ENV, "from-env")
    assert serve_key("0.0.0.0", None) == "from-env"


def test_serve_refuses_a_public_host_before_starting_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("no server may start")

    monkeypatch.setattr("subprocess.Popen", no_server)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--api-key" in capsys.readouterr().err


def test_clients_send_our_variable_first_then_openais(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert client_api_key() == "EMPTY"
    monkeypatch.setenv("OPENAI_API_KEY", "openai")
    assert client_api_key() == "openai"
    monkeypatch.setenv(API_KEY_ENV, "ours")
    client = ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model="smollm2")
    assert client.api_key.get_secret_value() == "ours"
