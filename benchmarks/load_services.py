"""Load on the running services over loopback: N concurrent clients asking golden
questions for a fixed time, with the extractive generator (the CPU default).

The server runs as its own process (``appliance-web serve``) on a fresh data directory
with the sample corpus; each client signs in with its own session and asks in a loop.
Reported: requests per second, latency p50/p95/max, and every error. The per-user ask
and sign-in limits are raised for the run (it measures capacity, not the limiters).

``--workers 1 2`` runs the service once per count, side by side in one run. More than one
worker needs the store servers, named in the environment as for the appliance itself
(``APPLIANCE_LEXICAL__ENGINE=opensearch``, ``APPLIANCE_VECTORS__ENGINE=qdrant`` and
``APPLIANCE_VECTORS__QDRANT__URL``) and a graph other than the embedded one
(``APPLIANCE_GRAPH__ENGINE=neo4j`` or ``none``, for every row alike); on the embedded
stores the service refuses, and the row says so.

    .venv/bin/python benchmarks/load_services.py [--clients 20] [--seconds 120] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from rich.console import Console

from appliance.engines import Appliance
from appliance.settings import PROJECT_ROOT, Settings
from services.accounts import LocalAccounts

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "load_services.json"
PASSWORD = "load test password"
console = Console()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(base: str, server: subprocess.Popen[bytes]) -> bool:
    """Until the server answers /ready (models and stores open), at most five minutes;
    False when it exits first (it refused to start)."""
    for _ in range(1200):
        if server.poll() is not None:
            return False
        try:
            if httpx.get(f"{base}/ready", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(0.25)
    return False


def client_loop(base: str, questions: list[str], stop: float, out: dict[str, list]) -> None:  # type: ignore[type-arg]
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get("/health")
        token = {"x-csrftoken": client.cookies.get("csrftoken", "")}
        signed = client.post("/api/login", json={"user_id": "dr-okafor", "password": PASSWORD},
                             headers=token)  # fmt: skip
        if signed.status_code != 200:
            out["errors"].append(f"sign-in {signed.status_code}")
            return
        token = {"x-csrftoken": client.cookies.get("csrftoken", "")}  # the session's own
        n = 0
        while time.monotonic() < stop:
            question = questions[n % len(questions)]
            n += 1
            started = time.perf_counter()
            try:
                response = client.post("/api/ask", json={"question": question}, headers=token)
            except httpx.HTTPError as error:
                out["errors"].append(repr(error))
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code == 200:
                out["latency_ms"].append(elapsed)
            else:
                out["errors"].append(f"{response.status_code} {response.text[:120]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in (SAMPLE / "golden.jsonl").open()]
    rows = {
        f"{n} worker(s)": run_service(n, questions, args.clients, args.seconds)
        for n in args.workers
    }
    console.print(rows)
    RESULTS.write_text(
        json.dumps(rows if len(rows) > 1 else next(iter(rows.values())), indent=2) + "\n"
    )
    console.print(f"wrote {RESULTS}")


def run_service(
    workers: int, questions: list[str], clients: int, seconds: float
) -> dict[str, object]:
    """One service of ``workers`` processes on a fresh data directory, under load."""
    with tempfile.TemporaryDirectory(prefix="appliance-load-") as work:
        data = Path(work) / "data"
        (data / "access").mkdir(parents=True)
        shutil.copyfile(SAMPLE / "subjects.toml", data / "access" / "subjects.toml")
        LocalAccounts(data / "access" / "accounts.json").set_password("dr-okafor", PASSWORD)
        with Appliance(Settings(data_dir=data)) as appliance:
            appliance.ingestor.ingest([SAMPLE / "documents"])
        port = free_port()
        # httpx (unlike a browser) keeps Secure cookies away from http://127.0.0.1.
        environment = {**os.environ, "APPLIANCE_DATA_DIR": str(data),
                       "APPLIANCE_SERVICES__ASK_PER_MINUTE": "1000000",
                       "APPLIANCE_SERVICES__LOGIN_PER_MINUTE": "1000",
                       "APPLIANCE_SERVICES__SECURE_COOKIES": "false"}  # fmt: skip
        command = [str(Path(sys.executable).parent / "appliance-web"), "serve", "--port", str(port),
                   "--workers", str(workers)]  # fmt: skip
        log = Path(work) / "serve.log"  # a file, not a pipe: a full pipe would stall it
        with log.open("w") as stderr:
            server = subprocess.Popen(
                command, env=environment, stdout=subprocess.DEVNULL, stderr=stderr
            )
        base = f"http://127.0.0.1:{port}"
        try:
            if not wait_ready(base, server):  # refused: more workers than the stores admit
                return {"workers": workers, "refused": log.read_text().strip()}
            # Warm-up: models load on the first question.
            warm = {"latency_ms": [], "errors": []}  # type: dict[str, list]  # type: ignore[type-arg]
            client_loop(base, questions[:3], time.monotonic() + 5, warm)
            out: dict[str, list] = {"latency_ms": [], "errors": []}  # type: ignore[type-arg]
            console.print(
                f"{clients} clients for {seconds:.0f} s against {base} ({workers} worker(s))"
            )
            stop = time.monotonic() + seconds
            started = time.monotonic()
            threads = [
                threading.Thread(target=client_loop, args=(base, questions, stop, out))
                for _ in range(clients)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(timeout=60)
    latencies = sorted(out["latency_ms"])
    return {
        "workers": workers,
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(latencies),
        "requests_per_second": round(len(latencies) / wall, 2),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
        "max_ms": round(latencies[-1], 1) if latencies else None,
        "errors": len(out["errors"]),
        "error_samples": out["errors"][:5],
    }


if __name__ == "__main__":
    main()
