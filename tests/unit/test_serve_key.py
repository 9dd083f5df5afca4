"""``serve`` binds beyond this machine only with an API key, by every spelling of its flags.

The refusals go through the real command line (``cli.main``) and, for flags after ``--``, vLLM's
own argument parser; a refused command must start no process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from langgraph_parallel.apps.cli import main
from langgraph_parallel.models.served import is_local_host
from langgraph_parallel.models.served_chat import API_KEY_ENV, ChatVLLMServer, client_api_key
from langgraph_parallel.models.server import API_SERVER_MODULE, Listener, server_keys

_POPEN = subprocess.Popen
HUB_MODEL = "org/some-model"  # passed to vLLM as it is: nothing is resolved or converted


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)


class _Started(Exception):
    """Raised by the stand-in of wait_until_up: the server process was started."""


class _Servers:
    """Stands in for subprocess.Popen and wait_until_up; records the servers serve started.

    Other commands run (vLLM's import probes the CPU with a few).
    """

    def __init__(self) -> None:
        self.started: list[tuple[list[str], dict[str, str]]] = []
        self.url = ""

    def popen(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        if API_SERVER_MODULE not in command:
            return _POPEN(command, *args, **kwargs)
        self.started.append((list(command), dict(kwargs["env"])))
        return _ExitedProcess()

    def wait_until_up(self, proc: Any, url: str, **_: Any) -> None:
        self.url = url
        raise _Started


class _ExitedProcess:
    returncode = 0

    def poll(self) -> int:
        return 0


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> _Servers:
    fake = _Servers()
    monkeypatch.setattr("subprocess.Popen", fake.popen)
    monkeypatch.setattr("langgraph_parallel.models.server.wait_until_up", fake.wait_until_up)
    return fake


def test_only_loopback_addresses_are_local() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1"):
        assert is_local_host(host), host
    for host in ("", "0.0.0.0", "::", "192.168.1.5", "10.0.0.3", "myhost.lan"):
        assert not is_local_host(host), host
    assert Listener("", 8000).url == "http://127.0.0.1:8000/v1"
    assert Listener("::1", 8001).url == "http://[::1]:8001/v1"
    assert not Listener("0.0.0.0", 8000).local and Listener("0.0.0.0", 8000, uds="/s").local


def test_the_keys_are_vllms_flag_else_its_variable_and_empty_ones_count_for_none() -> None:
    env = {"VLLM_API_KEY": "from-env"}
    assert server_keys(None, env) == ("from-env",)
    assert server_keys(["flag"], env) == ("flag",)
    assert server_keys([None], env) == ()  # what vLLM's parser makes of --api-key ""
    assert server_keys(None, {"VLLM_API_KEY": ""}) == () == server_keys(None, {})


REFUSED = {
    "--host X": ["--host", "0.0.0.0"],
    "--host=X": ["--host=0.0.0.0"],
    "--host ''": ["--host", ""],
    "--host ::": ["--host", "::"],
    "--host LAN": ["--host", "192.168.1.5"],
    "-- --host X": ["--", "--host", "0.0.0.0"],
    "-- --host=X": ["--", "--host=0.0.0.0"],
    "-- --host ::": ["--", "--host", "::"],
    "-- --host LAN": ["--host", "127.0.0.1", "--", "--host", "10.1.2.3"],
    "-- --ho X (abbreviated)": ["--", "--ho", "0.0.0.0"],
    "-- --api-key '' undoes --api-key": [
        "--host",
        "0.0.0.0",
        "--api-key",
        "k1",
        "--",
        "--api-key",
        "",
    ],
}


@pytest.mark.parametrize("flags", REFUSED.values(), ids=REFUSED.keys())
@pytest.mark.usefixtures("no_keys")
def test_serve_refuses_every_spelling_of_an_open_host_and_starts_nothing(
    flags: list[str], servers: _Servers, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *flags]) == 2
    err = capsys.readouterr().err
    assert "with no API key" in err and "--api-key KEY" in err and "bind 127.0.0.1" in err
    assert servers.started == []


@pytest.mark.usefixtures("no_keys")
def test_serve_refuses_a_unix_socket_it_cannot_wait_for(
    servers: _Servers, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--", "--uds", "/tmp/vllm.sock"]) == 2
    assert "cannot serve on --uds" in capsys.readouterr().err
    assert servers.started == []


ACCEPTED: dict[str, tuple[list[str], dict[str, str], str | None, str]] = {
    # flags, environment, VLLM_API_KEY the server gets, the URL serve waits on
    "default": ([], {}, None, "http://127.0.0.1:8000/v1"),
    "--api-key": (["--host", "0.0.0.0", "--api-key", "k1"], {}, "k1", "http://127.0.0.1:8000/v1"),
    "our variable": (["--host", "::"], {API_KEY_ENV: "ours"}, "ours", "http://127.0.0.1:8000/v1"),
    "VLLM_API_KEY": (["--host", "10.1.2.3"], {"VLLM_API_KEY": "v"}, "v", "http://10.1.2.3:8000/v1"),
    "-- --host local": (
        ["--host", "0.0.0.0", "--", "--host", "127.0.0.1", "--port", "9001"],
        {},
        None,
        "http://127.0.0.1:9001/v1",
    ),
    "-- --api-key": (
        ["--", "--host=0.0.0.0", "--api-key", "k2"],
        {},
        None,
        "http://127.0.0.1:8000/v1",
    ),
}


@pytest.mark.parametrize(("flags", "env", "server_key", "url"), ACCEPTED.values(), ids=ACCEPTED)
@pytest.mark.usefixtures("no_keys")
def test_serve_starts_a_local_or_keyed_server_and_waits_where_vllm_listens(
    flags: list[str],
    env: dict[str, str],
    server_key: str | None,
    url: str,
    servers: _Servers,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(_Started):
        main(["serve", "--model", HUB_MODEL, *flags])
    [(command, server_env)] = servers.started
    assert server_env.get("VLLM_API_KEY") == server_key
    if server_key:  # through the environment, never the command line `ps` shows
        assert server_key not in command
    assert servers.url == url


@pytest.mark.usefixtures("no_keys")
def test_a_config_file_cannot_open_the_host_serve_names(
    servers: _Servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vLLM reads --config first and lets the command line override it, --host included.
    config = tmp_path / "vllm.yaml"
    config.write_text("host: 0.0.0.0\nport: 9002\n")
    with pytest.raises(_Started):
        main(["serve", "--model", HUB_MODEL, "--", "--config", str(config)])
    assert servers.url == "http://127.0.0.1:8000/v1"
    config.write_text("api-key: from-file\n")
    servers.started.clear()
    with pytest.raises(_Started):  # a key in the file counts: vLLM will ask for it
        main(["serve", "--model", HUB_MODEL, "--host", "0.0.0.0", "--", "--config", str(config)])
    assert len(servers.started) == 1


def test_clients_send_our_variable_first_then_openais(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert client_api_key() == "EMPTY"
    monkeypatch.setenv("OPENAI_API_KEY", "openai")
    assert client_api_key() == "openai"
    monkeypatch.setenv(API_KEY_ENV, "ours")
    client = ChatVLLMServer(base_url="http://127.0.0.1:9/v1", model="smollm2")
    assert client.api_key.get_secret_value() == "ours"
