"""Soak: the web service on loopback under mixed work for a long time, the way a ward,
the IT office and the compliance office use it together.

The server runs as its own process (``appliance-web serve``) on a fresh data directory
with the sample corpus and a witness directory for the audit checkpoints. For the whole
run, at once:

- clinicians ask the sample questions and open the documents their answers cite;
- a nurse opens a care plan of her care team directly;
- a clinician breaks the glass for one patient, opens that patient's care plan, ends it;
- IT uploads a small new document now and then and follows its job;
- an administrator adds and removes a policy rule (``appliance policy``, another process);
- the compliance officer searches the log and verifies it.

Reported: requests by kind, every error (any 5xx, or a refusal the workload did not
expect), the server's memory over time (first and last fifth of the run, and the
largest), then, with the server stopped, ``audit verify --witness`` and whether the stores
and the catalog agree.

    .venv/bin/python benchmarks/soak.py [--minutes 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import httpx
from load_services import SAMPLE, free_port, wait_ready
from rich.console import Console

from appliance.engines import Appliance
from appliance.settings import PROJECT_ROOT, Settings
from services.accounts import LocalAccounts

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "soak.json"
PASSWORD = "soak test password"
USERS = ("dr-okafor", "dr-shah", "nurse-lindqvist", "it-santos", "audit-ito")
BIN = Path(sys.executable).parent
console = Console()


class Tally:
    """What every worker did, and what went wrong, shared across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done: Counter[str] = Counter()
        self.errors: list[str] = []

    def check(
        self, kind: str, response: httpx.Response, expected: tuple[int, ...] = (200,)
    ) -> bool:
        with self.lock:
            self.done[kind] += 1
            if response.status_code not in expected:
                self.errors.append(f"{kind}: {response.status_code} {response.text[:160]}")
                return False
        return True

    def failed(self, kind: str, why: str) -> None:
        with self.lock:
            self.done[kind] += 1
            self.errors.append(f"{kind}: {why}")


def signed_in(base: str, user: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=120)
    client.get("/health")
    client.post(
        "/api/login", json={"user_id": user, "password": PASSWORD},
        headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
    ).raise_for_status()  # fmt: skip
    return client


def unsafe(client: httpx.Client) -> dict[str, str]:
    """The session's CSRF token, read afresh: break-the-glass rotates it."""
    return {"x-csrftoken": client.cookies.get("csrftoken", "")}


def clinician(base: str, user: str, questions: list[str], stop: float, tally: Tally) -> None:
    with closing(signed_in(base, user)) as client:
        n = 0
        while time.monotonic() < stop:
            question = questions[n % len(questions)]
            n += 1
            asked = client.post("/api/ask", json={"question": question}, headers=unsafe(client))
            if not tally.check("ask", asked):
                continue
            cited = {c["doc_id"] for s in asked.json()["sentences"] for c in s["citations"]}
            for doc_id in sorted(cited)[:2]:
                params = {"cited_in": asked.json()["request_id"]}
                tally.check("view cited", client.get(f"/api/documents/{doc_id}", params=params))


def nurse(base: str, stop: float, tally: Tally) -> None:
    with closing(signed_in(base, "nurse-lindqvist")) as client:
        while time.monotonic() < stop:
            tally.check("view care plan", client.get("/api/documents/care-plan-p10234"))
            tally.check("history", client.get("/api/history"))
            time.sleep(2)


def break_glass(base: str, stop: float, tally: Tally) -> None:
    reason = "collapsed in the corridor, unresponsive, history needed for resuscitation"
    with closing(signed_in(base, "dr-okafor")) as client:
        while time.monotonic() < stop:
            tally.check("care plan before", client.get("/api/documents/care-plan-p10234"), (404,))
            started = client.post(
                "/api/break-glass", json={"reason": reason, "patient_id": "P-10234", "minutes": 5},
                headers=unsafe(client),
            )  # fmt: skip
            tally.check("break glass", started)
            tally.check("care plan during", client.get("/api/documents/care-plan-p10234"))
            tally.check("other patient", client.get("/api/documents/care-plan-p20871"), (404,))
            tally.check(
                "end break glass", client.delete("/api/break-glass", headers=unsafe(client))
            )
            time.sleep(20)


def uploads(base: str, stop: float, tally: Tally) -> None:
    with closing(signed_in(base, "it-santos")) as client:
        n = 0
        while time.monotonic() < stop:
            n += 1
            document = (
                f"---\ndoc_id: soak-notice-{n}\ntitle: Ward Notice {n}\nsensitivity: internal\n"
                f"departments: [all]\n---\n# Ward Notice {n}\n\nCheck the resuscitation trolley "
                f"every morning and sign the log. Notice number {n}.\n"
            ).encode()
            accepted = client.post(
                "/api/documents", files={"data": (f"notice-{n}.md", document, "text/markdown")},
                headers=unsafe(client),
            )  # fmt: skip
            if tally.check("upload", accepted, (202,)):
                job_id = accepted.json()["job_id"]
                for _ in range(600):
                    job = client.get(f"/api/jobs/{job_id}").json()
                    if job["state"] in ("done", "failed"):
                        break
                    time.sleep(0.5)
                if job["state"] != "done" or job["outcomes"][0]["status"] != "added":
                    tally.failed("upload", f"job ended {job['state']}: {job['outcomes']}")
            time.sleep(30)


def policy_changes(data: Path, stop: float, tally: Tally) -> None:
    rule = ["p", "role:pharmacist", "own", "restricted", "read", "deny"]
    environment = {**os.environ, "APPLIANCE_DATA_DIR": str(data)}
    adding = True
    while time.monotonic() < stop:
        verb = "add" if adding else "remove"
        done = subprocess.run(
            [str(BIN / "appliance"), "policy", verb, *rule, "--actor", "soak-admin"],
            env=environment, capture_output=True, text=True,
        )  # fmt: skip
        with tally.lock:
            tally.done[f"policy {verb}"] += 1
            if done.returncode != 0:
                tally.errors.append(f"policy {verb}: {done.stderr[-300:]}")
        adding = not adding
        time.sleep(60)


def compliance(base: str, stop: float, tally: Tally) -> None:
    with closing(signed_in(base, "audit-ito")) as client:
        while time.monotonic() < stop:
            tally.check("audit search", client.get("/api/audit/records", params={"limit": 50}))
            verified = client.post("/api/audit/verify", headers=unsafe(client))
            if tally.check("audit verify", verified) and not verified.json()["ok"]:
                tally.failed("audit verify", str(verified.json()["problems"][:3]))
            time.sleep(30)


def rss_mb(pid: int) -> tuple[float, float]:
    """Resident memory (MB) the process owns (anonymous: heaps, tensors, caches) and the
    file pages it has mapped (the audit log is read through mmap: those pages are the
    page cache's, and grow with the log, not with a leak)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) / 1024
    return fields.get("RssAnon", float("nan")), fields.get("RssFile", float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in (SAMPLE / "golden.jsonl").open()]
    with tempfile.TemporaryDirectory(prefix="appliance-soak-") as work:
        data, witness = Path(work) / "data", Path(work) / "witness-mount"
        (data / "access").mkdir(parents=True)
        shutil.copyfile(SAMPLE / "subjects.toml", data / "access" / "subjects.toml")
        accounts = LocalAccounts(data / "access" / "accounts.json")
        for user in USERS:
            accounts.set_password(user, PASSWORD)
        with Appliance(Settings(data_dir=data)) as appliance:
            appliance.ingestor.ingest([SAMPLE / "documents"])
        port = free_port()
        environment = {**os.environ, "APPLIANCE_DATA_DIR": str(data),
                       "APPLIANCE_SERVICES__ASK_PER_MINUTE": "1000000",
                       "APPLIANCE_SERVICES__SECURE_COOKIES": "false",
                       "APPLIANCE_AUDIT__WITNESS_DIR": str(witness),
                       "APPLIANCE_AUDIT__CHECKPOINT_SECONDS": "15"}  # fmt: skip
        server = subprocess.Popen(
            [str(BIN / "appliance-web"), "serve", "--port", str(port)],
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        tally = Tally()
        memory: list[tuple[float, float]] = []  # (seconds, anonymous MB)
        mapped_files: list[float] = []
        try:
            wait_ready(base)
            with closing(signed_in(base, "dr-shah")) as warm:  # models load on the first question
                warm.post("/api/ask", json={"question": questions[0]}, headers=unsafe(warm))
            started = time.monotonic()
            stop = started + args.minutes * 60
            console.print(f"soak for {args.minutes:g} min against {base}")
            workers = [
                threading.Thread(target=clinician, args=(base, "dr-shah", questions, stop, tally)),
                threading.Thread(target=clinician, args=(base, "dr-okafor", questions[::-1], stop, tally)),
                threading.Thread(target=nurse, args=(base, stop, tally)),
                threading.Thread(target=break_glass, args=(base, stop, tally)),
                threading.Thread(target=uploads, args=(base, stop, tally)),
                threading.Thread(target=policy_changes, args=(data, stop, tally)),
                threading.Thread(target=compliance, args=(base, stop, tally)),
            ]  # fmt: skip
            for worker in workers:
                worker.start()
            while any(w.is_alive() for w in workers):
                anonymous, files = rss_mb(server.pid)
                memory.append((time.monotonic() - started, anonymous))
                mapped_files.append(files)
                time.sleep(10)
        finally:
            server.terminate()
            server.wait(timeout=120)
        verify = subprocess.run(
            [str(BIN / "audit"), "--dir", str(data / "audit"), "verify", "--witness", str(witness)],
            capture_output=True, text=True,
        )  # fmt: skip
        with Appliance(Settings(data_dir=data)) as appliance:
            indexed = [r for r in appliance.catalog.documents() if r.state == "indexed"]
            stores = {
                "catalog_chunks": sum(r.chunk_count for r in indexed),
                "lexical_chunks": appliance.lexical.count(),
                "vector_chunks": appliance.vectors.count(),
                "pending_documents": len(appliance.catalog.pending()),
            }
    fifth = max(1, len(memory) // 5)
    fifths = [memory[i * fifth : (i + 1) * fifth] or memory[-1:] for i in range(5)]
    figures = {
        "minutes": args.minutes,
        "requests": dict(sorted(tally.done.items())),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:10],
        "server_file_pages_mb": {
            "first": round(mapped_files[0], 1),
            "last": round(mapped_files[-1], 1),
        },
        "server_anonymous_rss_mb": {
            "first_fifth_median": round(statistics.median(m for _, m in memory[:fifth]), 1),
            "last_fifth_median": round(statistics.median(m for _, m in memory[-fifth:]), 1),
            "max": round(max(m for _, m in memory), 1),
            "median_by_fifth": [round(statistics.median(m for _, m in part), 1) for part in fifths],
            "samples": len(memory),
        },
        "audit_verify_witness": {"exit_code": verify.returncode, "output": verify.stdout.strip()},
        "stores": stores,
        "stores_agree": stores["catalog_chunks"]
        == stores["lexical_chunks"]
        == stores["vector_chunks"]
        and stores["pending_documents"] == 0,
    }
    console.print(figures)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
