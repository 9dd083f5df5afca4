"""A real nginx in front of two stub replicas, configured as the serving-replicas experiment does.

With ``hash $http_x_prefix_key consistent`` every call of a question (the same key, as
``ChatVLLMServer`` sends it) reaches one replica and different questions spread; round robin
alternates whatever the key. Skipped where nginx is not installed (``apt-get install
nginx-light``).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from lab.experiments.serving.replicas import nginx_config, wait_for
from langgraph_parallel.models.served import open_url
from langgraph_parallel.models.served_chat import prefix_key
from tests.local_http import JsonHandler, local_server
from tests.servers import free_port

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
pytestmark = pytest.mark.skipif(NGINX is None, reason="needs nginx (apt-get install nginx-light)")


def _replica(name: str, seen: list[tuple[str, str]], lock: threading.Lock) -> type:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            with lock:
                seen.append((name, self.headers.get("X-Prefix-Key", "")))
            self.send_json({"object": "list", "data": [{"id": name}]})

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.mark.parametrize("route", ["prefix-key", "round-robin"])
def test_nginx_sends_a_question_s_calls_to_one_replica_only_when_routed_by_key(
    route: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    with (
        local_server(_replica("a", seen, lock), monkeypatch) as a,
        local_server(_replica("b", seen, lock), monkeypatch) as b,
    ):
        ports = [int(a.rsplit(":", 1)[1]), int(b.rsplit(":", 1)[1])]
        listen = free_port()
        conf = tmp_path / "nginx.conf"
        conf.write_text(nginx_config(route, listen, ports, tmp_path))
        nginx = subprocess.Popen([str(NGINX), "-c", str(conf), "-p", str(tmp_path)])
        try:
            wait_for(listen)
            seen.clear()
            keys = [prefix_key([HumanMessage(f"Question {i}?")]) for i in range(8)]
            for key in keys:
                for _ in range(4):  # a question's calls: its steps, its forks
                    request = urllib.request.Request(
                        f"http://127.0.0.1:{listen}/v1/models", headers={"X-Prefix-Key": key}
                    )
                    with open_url(request, timeout=10) as response:
                        response.read()
        finally:
            nginx.terminate()
            nginx.wait(timeout=30)
    by_key: dict[str, set[str]] = {}
    for replica, key in seen:
        by_key.setdefault(key, set()).add(replica)
    assert sorted(by_key) == sorted(keys) and len(seen) == 32
    spread = Counter(replica for replica, _ in seen)
    if route == "prefix-key":
        assert all(len(replicas) == 1 for replicas in by_key.values())
        assert set(spread) == {"a", "b"}  # eight questions do not all land on one replica
    else:
        assert spread == {"a": 16, "b": 16}
        assert all(replicas == {"a", "b"} for replicas in by_key.values())
