"""Serve the embedded model with vLLM's OpenAI-compatible server and talk to it with ChatOpenAI.

The ``vllm`` console script fails with the CPU wheel, so the server is started as
``python -m vllm.entrypoints.openai.api_server``. ``--enable-prompt-tokens-details`` makes the
server report cached prompt tokens (``usage.prompt_tokens_details.cached_tokens``), which
``ChatOpenAI`` exposes as ``usage_metadata["input_token_details"]["cache_read"]`` — the same
counter ``ChatVLLM`` fills in-process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.engine import core_start_method, engine_defaults
from langgraph_parallel.models.folders import resolve_model
from langgraph_parallel.models.served import (
    client_api_key,
    is_local_host,
    is_loopback,
    open_url,
)

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
"""The module ``python -m`` runs as the server (the ``vllm`` console script fails on CPU)."""


def server_command(
    model: str = "smollm2",
    *,
    port: int = 8000,
    host: str = "127.0.0.1",
    engine_kwargs: Mapping[str, Any] | None = None,
) -> list[str]:
    """Return the command line that serves ``model`` (embedded name or folder) on ``host:port``.

    The served model name is ``model`` itself, so clients pass the same string. Engine settings
    are :func:`~langgraph_parallel.models.engine.engine_defaults` updated by ``engine_kwargs``
    (``vllm.LLM`` names, e.g. ``{"kv_cache_memory_bytes": 512 << 20}``), passed as flags.
    """
    path, _ = resolve_model(model)
    flags = server_flags(model, port=port, host=host, engine_kwargs=engine_kwargs)
    return [sys.executable, "-m", API_SERVER_MODULE, "--model", path, *flags]


def server_flags(
    model: str = "smollm2",
    *,
    port: int = 8000,
    host: str = "127.0.0.1",
    engine_kwargs: Mapping[str, Any] | None = None,
) -> list[str]:
    """Return the flags of :func:`server_command` after ``--model PATH``; no model is resolved."""
    command = [
        "--served-model-name",
        model,
        "--host",
        host,
        "--port",
        str(port),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--max-logprobs",
        "20",
        "--seed",
        "0",
    ]
    for key, value in {**engine_defaults(), **dict(engine_kwargs or {})}.items():
        flag = key.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):  # vLLM's boolean flags take --x / --no-x
            command.append(f"--{flag}" if value else f"--no-{flag}")
        elif isinstance(value, dict):  # e.g. --speculative-config takes JSON
            command += [f"--{flag}", json.dumps(value)]
        else:
            command += [f"--{flag}", str(value)]
    return command


@dataclass(frozen=True)
class Listener:
    """Where a vLLM server listens and the API keys it asks of clients, as vLLM reads its flags.

    Attributes:
        host: The address bound; ``""`` is every interface.
        port: The HTTP port.
        keys: The keys vLLM accepts (``Authorization: Bearer KEY``); empty: it asks for none.
        uds: The Unix socket it listens on instead of ``host:port`` (``--uds``), if any.
    """

    host: str
    port: int
    keys: tuple[str, ...] = ()
    uds: str | None = None

    @property
    def local(self) -> bool:
        """Whether only this machine can reach the server (a loopback host or a Unix socket)."""
        return self.uds is not None or is_local_host(self.host)

    @property
    def url(self) -> str:
        """The base URL (``.../v1``) a client on this machine reaches the server at."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        if ":" in host:  # an IPv6 address
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"


def server_keys(given: Sequence[str | None] | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """Return the keys a vLLM server requires: ``--api-key`` values, else ``VLLM_API_KEY``.

    vLLM's rule (``init_entrypoints_middleware``): the flag's values when the flag is given,
    else the environment's key, and empty values dropped, so ``--api-key ""`` asks for no key
    even with ``VLLM_API_KEY`` set.
    """
    return tuple(key for key in (given or [env.get("VLLM_API_KEY")]) if key)


def server_listener(flags: Sequence[str], env: Mapping[str, str]) -> Listener:
    """Return where the server started with ``flags`` listens, read by vLLM's own parser.

    ``flags`` are the arguments after ``python -m`` :data:`API_SERVER_MODULE`; ``env`` is the
    environment the server gets. vLLM's parser is the one that decides: the last ``--host``
    wins; ``--host=X``, underscores for dashes (``--api_key``), abbreviations (``--ho``),
    ``--config`` files and ``--uds`` all count; and no ``--host`` binds every interface.
    Importing it costs vLLM's import (8-17 s on a 2-core CPU), so a caller whose flags are all
    its own reads them itself.

    Raises:
        UserError: vLLM is not installed, or its parser rejects ``flags``.
    """
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError as exc:
        raise UserError(f"Serving needs vLLM: {install_hint('cpu')}, or gpu.") from exc
    try:
        cli_args = importlib.import_module("vllm.entrypoints.launchers.cli_args")
    except ImportError:  # vLLM before the launchers package (the gpu extra allows 0.11)
        cli_args = importlib.import_module("vllm.entrypoints.openai.cli_args")
    parser = cli_args.make_arg_parser(FlexibleArgumentParser(prog="vllm"))
    try:
        args = parser.parse_args(list(flags))
    except SystemExit as exc:  # argparse has printed why (or the help) on stderr
        # The flags are not repeated: they may hold an --api-key.
        raise UserError(
            "vLLM's server does not take the flags after --: see its message above."
        ) from exc
    return Listener(
        host=args.host or "",
        port=int(args.port),
        keys=server_keys(args.api_key, env),
        uds=args.uds or None,
    )


def server_environment(**extra: str) -> dict[str, str]:
    """Return the environment a server runs in: this one, ``extra``, and its core forked.

    vLLM's CPU platform would spawn the server's engine core; our plugin forks it instead
    (:data:`~langgraph_parallel.models.vllm_plugin.FORK_CORE_ENV`) unless the user chose
    ``VLLM_WORKER_MULTIPROC_METHOD``, as the in-process engine does.
    """
    from langgraph_parallel.models.vllm_plugin import FORK_CORE_ENV

    env = {**os.environ, **extra}
    if core_start_method() == "fork":
        env[FORK_CORE_ENV] = "1"
    return env


def start_server(
    model: str = "smollm2",
    *,
    port: int = 8000,
    timeout: float = 600.0,
    log_path: str | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
    warm: bool = False,
    api_key: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the server in a child process and wait until it answers ``/v1/models``.

    The server runs in its own process group because vLLM starts an engine-core child process;
    :func:`stop_server` ends the whole group, so no engine outlives its server.

    Args:
        model: Embedded model name or model folder.
        port: Port on 127.0.0.1.
        timeout: Seconds to wait for the server to come up.
        log_path: File for the server's output (default: discarded).
        engine_kwargs: Engine settings over the defaults (see :func:`server_command`).
        warm: Then send :func:`~.served_chat.warm_up`'s requests, as ``langgraph-parallel serve``
            does.
        api_key: Require this key of every request (given to vLLM through its environment,
            ``VLLM_API_KEY``, not its command line).

    Returns:
        The running process; stop it with :func:`stop_server`.

    Raises:
        UserError: If the server exits or does not answer within ``timeout``.
    """
    command = server_command(model, port=port, engine_kwargs=engine_kwargs)
    env = server_environment(VLLM_LOGGING_LEVEL=os.environ.get("VLLM_LOGGING_LEVEL", "WARNING"))
    if api_key:
        env["VLLM_API_KEY"] = api_key
    if log_path:
        # The child keeps its own copy of the descriptor; the parent's is closed at once.
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                command, stdout=log, stderr=log, env=env, start_new_session=True
            )
    else:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    try:
        wait_until_up(proc, f"http://127.0.0.1:{port}/v1", timeout, log_path)
    except UserError:
        stop_server(proc)  # the engine-core child may still be running
        raise
    if warm:
        from langgraph_parallel.models.served_chat import warm_up

        warm_up(f"http://127.0.0.1:{port}/v1", model, api_key=api_key)
    return proc


def wait_until_up(
    proc: subprocess.Popen[bytes], base_url: str, timeout: float, log_path: str | None = None
) -> None:
    """Wait until the server ``proc`` runs answers ``GET {base_url}/models``.

    Raises:
        UserError: If it exits first, or does not answer within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(
                f"The vLLM server exited with status {proc.returncode}; "
                f"see {log_path or 'its log (pass log_path)'}."
            )
        try:
            with open_url(base_url + "/models", timeout=2):
                return
        except urllib.error.HTTPError as exc:
            if exc.code == 401:  # up, and asking for the API key it was started with
                return
            time.sleep(1.0)
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    raise UserError(f"The vLLM server did not answer at {base_url} within {timeout:g} s.")


def stop_server(proc: subprocess.Popen[bytes], *, timeout: float = 30.0) -> None:
    """Stop a server from :func:`start_server` with its engine process: SIGTERM, then SIGKILL.

    Works for any process started with ``start_new_session=True`` (its pid is its process
    group): see :func:`stop_group`. Safe to call twice and after the server has exited.
    """
    stop_group(proc.pid, timeout=timeout, reap=proc.poll)


def stop_group(
    pgid: int, *, timeout: float = 30.0, reap: Callable[[], object] | None = None
) -> None:
    """Stop every process of group ``pgid``: SIGTERM, then SIGKILL after ``timeout`` seconds.

    A server and its engine-core child share the group the server was started in
    (``start_new_session=True``), so no engine outlives its server. The group counts as gone
    when signal 0 finds none of its processes, or none this user may signal.

    Args:
        pgid: The group, i.e. the pid of the process started with a new session.
        timeout: Seconds each signal is given.
        reap: Collects the leader's exit status when it is this process's child (an exited,
            unreaped leader keeps the group alive); default: ``os.waitpid(pgid, WNOHANG)``.
            A caller holding the ``Popen`` passes its ``poll`` so that it keeps the status.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):  # the whole group is gone
            return
        deadline = time.monotonic() + timeout
        while _group_alive(pgid, reap):
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        else:
            return


def _group_alive(pgid: int, reap: Callable[[], object] | None) -> bool:
    if reap is not None:
        reap()
    else:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def chat_openai_for_server(base_url: str, model: str = "smollm2", **kwargs: Any) -> Any:
    """Return ``ChatOpenAI`` set up for a vLLM server: logprobs (top 16) and usage on.

    Stop sequences are kept in the output (vLLM's ``include_stop_str_in_output``), so the action
    parser sees ``</search>`` exactly as with the in-process engine.
    """
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise UserError(f"Install the client: {install_hint('openai')}.") from exc
    options: dict[str, Any] = {
        "base_url": base_url,
        "model": model,
        "api_key": client_api_key(),
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": 16,
        "stream_usage": True,
        "extra_body": {"include_stop_str_in_output": True},
    }
    if is_loopback(base_url):  # never through http_proxy: see served.open_url
        import httpx

        options.update(
            http_client=httpx.Client(trust_env=False),
            http_async_client=httpx.AsyncClient(trust_env=False),
        )
    options.update(kwargs)
    return ChatOpenAI(**options)
