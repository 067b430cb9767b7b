"""The operator's commands while the web service holds the embedded stores: `appliance
ingest`, `search` and `docs remove` hand their work to the running service instead of
waiting for stores that admit one process, and the service answers questions all along.
A command from an account that cannot read the data directory's token is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from appliance.owner import current
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, free_port, wait_until_answers

BIN = Path(sys.executable).parent


def run(arguments: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "appliance"), *arguments], env=environment, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_ingest_search_and_remove_go_through_the_running_service(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, data / "access" / "subjects.toml")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("hand-hygiene-policy.md", "isolation-precautions.md"):
        shutil.copy(SAMPLE_CORPUS / name, corpus / name)
    port = free_port()
    environment = {**os.environ, "APPLIANCE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [str(BIN / "appliance-web"), "serve", "--port", str(port)], env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/ready")
        owner = current(data)
        assert owner is not None and owner.pid == server.pid

        ingested = run(["ingest", str(corpus)], environment)
        assert ingested.returncode == 0, ingested.stderr
        assert "holds the stores" in ingested.stderr and "2 added" in ingested.stdout

        found = run(
            ["search", "alcohol gel hand rub", "--user", "dr-okafor", "--json", "-k", "3"],
            environment,
        )
        assert found.returncode == 0, found.stderr
        report = json.loads(found.stdout)
        assert report["results"][0]["doc_id"] == "hand-hygiene-policy"

        removed = run(["docs", "remove", "isolation-precautions"], environment)
        assert removed.returncode == 0, removed.stderr
        ready = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=30).json()
        assert ready["status"] == "ready"
        listed = run(
            ["search", "contact precautions apron", "--user", "dr-okafor", "--json"], environment
        )
        docs = {row["doc_id"] for row in json.loads(listed.stdout)["results"]}
        assert "isolation-precautions" not in docs

        wrong = httpx.post(
            f"http://127.0.0.1:{port}/api/operator/remove",
            json={"doc_ids": ["hand-hygiene-policy"]},
            headers={"authorization": "Bearer not-the-token"},
            timeout=30,
        )
        assert wrong.status_code == 401
    finally:
        server.terminate()
        server.wait(60)
    assert current(data) is None  # the record goes with the service


def test_without_a_service_the_command_opens_the_stores_itself(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "APPLIANCE_DATA_DIR": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
    }
    ingested = run(["ingest", str(SAMPLE_CORPUS / "hand-hygiene-policy.md")], environment)
    assert ingested.returncode == 0, ingested.stderr
    assert "holds the stores" not in ingested.stderr and "1 added" in ingested.stdout
