"""ParallelMuse on two ``serve`` replicas: one server, round robin, and routing by prefix key.

``langgraph-parallel bench run serving-replicas`` starts two ``langgraph-parallel serve``
replicas of ``smollm2-parallel`` (``start_server(warm=True)``, each with setting
``kv_cache_gib`` of prefix cache) and nginx in front of them, and runs ``bench --server`` with
``--graphs parallel-muse`` on the first ``--limit`` held-out HotpotQA bridge questions of the
ParallelMuse runs (:func:`~lab.experiments.muse.defaults.defaults.bridge_spec`), once per route
of setting ``routes``:

- ``one``: straight to the first replica (the saving one server gives);
- ``round-robin``: nginx's default balancing, as "M servers behind one load balancer" is;
- ``prefix-key``: nginx ``hash $http_x_prefix_key consistent``, on the header ``ChatVLLMServer``
  sends (a digest of the question's opening prompt, the same for every call and every fork of a
  question).

Both replicas' prefix caches are emptied before each route (vLLM's dev-mode
``/reset_prefix_cache``). Reported per route (``replicas.json``, ``replicas.md``): the share of
prompt tokens served from the prefix cache, the agent's cost per question (uncached prefill plus
generated tokens, as the ParallelMuse tables count it), calls and EM, wall seconds a question,
and each replica's requests and prefix-cache hit rate from its ``/metrics``. nginx is an
existing router: Debian's ``nginx-light`` (``apt-get install nginx-light``) or any nginx on the
path; the experiment writes its configuration and runs it in the foreground.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.code_age import GRAPHS, MUSE, SERVING
from lab.experiments.muse.defaults.defaults import bridge_spec
from lab.experiments.serving.serving_metrics import free_port, metric, reset_prefix_cache
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.served import open_url
from langgraph_parallel.paths import source_commit

__all__ = ["EXPERIMENT", "main", "nginx_config", "paired", "render", "wait_for"]

MODEL = "smollm2-parallel"
ROUTES = ("one", "round-robin", "prefix-key")


def nginx_config(route: str, listen: int, replicas: list[int], prefix: Path) -> str:
    """Return nginx's configuration for a route in front of the replicas' ports."""
    balance = {"round-robin": "", "prefix-key": "hash $http_x_prefix_key consistent;"}[route]
    servers = "\n".join(f"    server 127.0.0.1:{port};" for port in replicas)
    return f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  upstream replicas {{
    {balance}
{servers}
    keepalive 32;
  }}
  server {{
    listen 127.0.0.1:{listen};
    location / {{
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_read_timeout 600s;
      proxy_buffering off;
    }}
  }}
}}
"""


def _counters(port: int) -> dict[str, float]:
    with open_url(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        "hits": metric(text, "vllm:prefix_cache_hits_total"),
        "queries": metric(text, "vllm:prefix_cache_queries_total"),
        "requests": metric(text, "vllm:request_success_total"),
    }


def wait_for(port: int, seconds: float = 30.0) -> None:
    """Wait until something answers ``/v1/models`` on ``port`` (nginx, once it listens)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open_url(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise UserError(f"nginx did not answer on port {port} within {seconds:g} s")


def _route(run: Run, route: str, replicas: list[int]) -> dict[str, Any]:
    for port in replicas:
        reset_prefix_cache(f"http://127.0.0.1:{port}")
    before = [_counters(port) for port in replicas]
    nginx = None
    prefix = Path(tempfile.mkdtemp(prefix="nginx-"))
    if route == "one":
        url = f"http://127.0.0.1:{replicas[0]}"
    else:
        listen = free_port()
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_config(route, listen, replicas, prefix))
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        nginx = subprocess.Popen([binary, "-c", str(conf), "-p", str(prefix)])
        wait_for(listen)
        url = f"http://127.0.0.1:{listen}"
    begin = time.perf_counter()
    try:
        folder = run.bench(
            bridge_spec(
                limit=run.limit,
                graphs=("parallel-muse",),
                concurrency=run.settings["concurrency"],
                server=url + "/v1",
                out=str(run.out / route),
            ),
            child=True,
        )
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=30)
        shutil.rmtree(prefix, ignore_errors=True)
    seconds = time.perf_counter() - begin
    after = [_counters(port) for port in replicas]
    summary = json.loads((folder / "summary.json").read_text())["graphs"]["parallel-muse"]["all"]
    per_replica = []
    for b, a in zip(before, after, strict=True):
        queries = a["queries"] - b["queries"]
        per_replica.append(
            {
                "requests": int(a["requests"] - b["requests"]),
                "prefix_cache_hit_rate": round((a["hits"] - b["hits"]) / queries, 3)
                if queries > 0
                else None,
            }
        )
    prompt = float(summary["agent_prompt_tokens"])
    return {
        "route": route,
        "n": summary["n"],
        "cached_share": round(float(summary["agent_cached_prefill"]) / prompt, 3),
        "agent_cost": round(float(summary["agent_cost"]), 1),
        "agent_uncached_prefill": round(float(summary["agent_uncached_prefill"]), 1),
        "agent_generated": round(float(summary["agent_generated"]), 1),
        "llm_calls": round(float(summary["llm_calls"]), 2),
        "em": summary["em"],
        "wall_s_per_question": round(seconds / max(1, int(summary["n"])), 1),
        "replicas": per_replica,
    }


def paired(out: Path, routes: list[str]) -> dict[str, Any]:
    """Return each route's agent cost and uncached prefill over the first route's (and key/RR).

    Ratios of means over the questions every route ran, 95% paired bootstrap (the same
    questions, seeded: the rows differ in what the cache held, rarely in what was generated).
    """
    from lab.paired import paired_ratio
    from langgraph_parallel.eval.results import results_in

    rows = {r: {row["id"]: row for row in results_in(out / r)} for r in routes}
    common = sorted(set.intersection(*(set(v) for v in rows.values()))) if rows else []
    pairs = [(a, routes[0]) for a in routes[1:]]
    if {"prefix-key", "round-robin"} <= set(routes) and routes[0] != "round-robin":
        pairs.append(("prefix-key", "round-robin"))
    ratios: dict[str, Any] = {}
    for a, b in pairs:
        ratios[f"{a} / {b}"] = {
            key: asdict(
                paired_ratio(
                    [float(rows[a][q][key]) for q in common],
                    [float(rows[b][q][key]) for q in common],
                )
            )
            for key in ("agent_cost", "agent_uncached_prefill")
        }
    return ratios


def render(result: dict[str, Any]) -> str:
    """Return the routes' table (and the paired ratios) as markdown."""
    lines = [
        "| route | n | cached share of prompt tokens | agent cost / question | uncached "
        "prefill | generated | LLM calls | EM | wall s / question | requests per replica | "
        "replica hit rates |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["routes"]:
        requests = " / ".join(str(x["requests"]) for x in r["replicas"])
        rates = " / ".join(
            "–" if x["prefix_cache_hit_rate"] is None else f"{x['prefix_cache_hit_rate']:.3f}"
            for x in r["replicas"]
        )
        lines.append(
            f"| {r['route']} | {r['n']} | {r['cached_share']:.3f} | {r['agent_cost']:,.0f} | "
            f"{r['agent_uncached_prefill']:,.0f} | {r['agent_generated']:,.0f} | "
            f"{r['llm_calls']:.1f} | {r['em']:.3f} | {r['wall_s_per_question']:.1f} | "
            f"{requests} | {rates} |"
        )
    for name, pair in result.get("paired", {}).items():
        cost, prefill = pair["agent_cost"], pair["agent_uncached_prefill"]
        lines.append(
            f"\n{name}: agent cost {cost['ratio']:.2f}x [{cost['low']:.2f}, {cost['high']:.2f}], "
            f"uncached prefill {prefill['ratio']:.2f}x [{prefill['low']:.2f}, "
            f"{prefill['high']:.2f}] (95% paired bootstrap, n={cost['n']})"
        )
    return "\n".join(lines) + "\n"


def _run(run: Run) -> None:
    from langgraph_parallel.models.server import start_server, stop_server

    routes = [r for r in run.settings["routes"].split(",") if r]
    if unknown := sorted(set(routes) - set(ROUTES)):
        raise UserError(f"--set routes= takes {','.join(ROUTES)} (got {','.join(unknown)}).")
    if any(r != "one" for r in routes) and not (
        shutil.which("nginx") or Path("/usr/sbin/nginx").exists()
    ):
        raise UserError("the routed runs need nginx: apt-get install nginx-light.")
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # /reset_prefix_cache between routes
    run.out.mkdir(parents=True, exist_ok=True)
    run.uses(MODEL)
    engine = {"kv_cache_memory_bytes": int(run.settings["kv_cache_gib"] * (1 << 30))}
    ports = [free_port(), free_port()]
    while ports[1] == ports[0]:
        ports[1] = free_port()
    servers = [
        start_server(
            MODEL,
            port=port,
            log_path=str(run.out / f"replica-{i}.log"),
            warm=True,
            engine_kwargs=engine,
        )
        for i, port in enumerate(ports)
    ]
    result: dict[str, Any] = {
        "commit": source_commit(),
        "command": run.command,
        "engine": engine,
        "routes": [],
    }
    try:
        for route in routes:
            record = _route(run, route, ports)
            result["routes"].append(record)
            print(json.dumps(record), flush=True)
            result["paired"] = paired(run.out, [r["route"] for r in result["routes"]])
            Experiment.write_tables(run.out, "replicas", result, render(result))
    finally:
        for server in servers:
            stop_server(server)


def main(argv: list[str]) -> int:
    """``python -m lab.experiments.serving.replicas FOLDER``: the tables again from its rows."""
    out = Path(argv[0])
    result = json.loads((out / "replicas.json").read_text())
    result["paired"] = paired(out, [r["route"] for r in result["routes"]])
    Experiment.write_tables(out, "replicas", result, render(result))
    return 0


EXPERIMENT = Experiment(
    name="serving-replicas",
    about="ParallelMuse on two serve replicas: one server, round robin, routed by prefix key",
    out="benchmarks/serving/replicas",
    run=_run,
    limit=20,
    settings={"routes": ",".join(ROUTES), "concurrency": 4, "kv_cache_gib": 2.0},
    measures=(*GRAPHS, *MUSE, *SERVING, "lab/experiments/serving/replicas.py"),
)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
