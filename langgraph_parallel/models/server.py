"""Serve the embedded model with vLLM's OpenAI-compatible server and talk to it with ChatOpenAI.

The ``vllm`` console script fails with the CPU wheel, so the server is started as
``python -m vllm.entrypoints.openai.api_server``. ``--enable-prompt-tokens-details`` makes the
server report cached prompt tokens (``usage.prompt_tokens_details.cached_tokens``), which
``ChatOpenAI`` exposes as ``usage_metadata["input_token_details"]["cache_read"]`` — the same
counter ``ChatVLLM`` fills in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.engine import engine_defaults
from langgraph_parallel.models.vllm_chat import resolve_model


def server_command(
    model: str = "smollm2", *, port: int = 8000, host: str = "127.0.0.1"
) -> list[str]:
    """Return the command line that serves ``model`` (embedded name or folder) on ``host:port``.

    The served model name is ``model`` itself, so clients pass the same string.
    """
    path, _ = resolve_model(model)
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", path, "--served-model-name", model,
        "--host", host, "--port", str(port),
        "--enable-prefix-caching", "--enable-prompt-tokens-details",
        "--max-logprobs", "20", "--seed", "0",
    ]  # fmt: skip
    for key, value in engine_defaults().items():
        flag = "--" + key.replace("_", "-")
        command += [flag] if value is True else [flag, str(value)]
    return command


def start_server(
    model: str = "smollm2", *, port: int = 8000, timeout: float = 600.0, log_path: str | None = None
) -> subprocess.Popen[bytes]:
    """Start the server in a child process and wait until it answers ``/v1/models``.

    Args:
        model: Embedded model name or model folder.
        port: Port on 127.0.0.1.
        timeout: Seconds to wait for the server to come up.
        log_path: File for the server's output (default: discarded).

    Returns:
        The running process; stop it with ``proc.terminate()``.

    Raises:
        UserError: If the server exits or does not answer within ``timeout``.
    """
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    env = {**os.environ, "VLLM_LOGGING_LEVEL": os.environ.get("VLLM_LOGGING_LEVEL", "WARNING")}
    proc = subprocess.Popen(server_command(model, port=port), stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/v1/models"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(
                f"The vLLM server exited with status {proc.returncode}; "
                f"see {log_path or 'its log (pass log_path)'}."
            )
        try:
            with urllib.request.urlopen(url, timeout=2):
                return proc
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    proc.terminate()
    raise UserError(f"The vLLM server did not answer on port {port} within {timeout:g} s.")


def chat_openai_for_server(base_url: str, model: str = "smollm2", **kwargs: Any) -> Any:
    """Return ``ChatOpenAI`` set up for a vLLM server: logprobs (top 16) and usage on.

    Stop sequences are kept in the output (vLLM's ``include_stop_str_in_output``), so the action
    parser sees ``</search>`` exactly as with the in-process engine.
    """
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise UserError("Install the client: `pip install 'langgraph-parallel[openai]'`.") from exc
    options: dict[str, Any] = {
        "base_url": base_url,
        "model": model,
        "api_key": os.environ.get("OPENAI_API_KEY", "EMPTY"),
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": 16,
        "stream_usage": True,
        "extra_body": {"include_stop_str_in_output": True},
    }
    options.update(kwargs)
    return ChatOpenAI(**options)
