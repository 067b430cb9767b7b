"""The operator's commands while the web service holds the embedded stores: `appliance
ingest`, `search`, `ask`, `eval` and `docs remove` hand their work to the running service instead of
waiting for stores that admit one process, and the service answers questions all along.
A command from an account that cannot read the data directory's token is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from appliance.owner import current
from tests.conftest import SAMPLE_CORPUS, SLOW, free_port, wait_until_answers
from tests.e2e.service import BIN, environment, prepare_data, running_service


def run(arguments: list[str], data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "appliance"), *arguments], env=environment(data), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def test_ingest_search_and_remove_go_through_the_running_service(tmp_path: Path) -> None:
    data = tmp_path / "data"
    prepare_data(data)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("hand-hygiene-policy.md", "isolation-precautions.md"):
        shutil.copy(SAMPLE_CORPUS / name, corpus / name)
    with running_service(data) as (server, base):
        owner = current(data)
        assert owner is not None and owner.pid == server.pid

        ingested = run(["ingest", str(corpus)], data)
        assert ingested.returncode == 0, ingested.stderr
        assert "holds the stores" in ingested.stderr and "2 added" in ingested.stdout

        found = run(
            ["search", "alcohol gel hand rub", "--user", "dr-okafor", "--json", "-k", "3"],
            data,
        )
        assert found.returncode == 0, found.stderr
        report = json.loads(found.stdout)
        assert report["results"][0]["doc_id"] == "hand-hygiene-policy"

        question = "How long should I rub my hands with alcohol gel?"
        asked = run(["ask", question, "--user", "dr-okafor", "--json"], data)
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        assert not answer["refused"], answer
        cited = answer["sentences"][0]["citations"][0]
        assert (
            cited["doc_id"] == "hand-hygiene-policy"
            and cited["quote"] in answer["sentences"][0]["text"]
        )
        shown = run(["ask", question, "--user", "dr-okafor"], data)
        assert "Hand Hygiene Policy" in shown.stdout and "audit entry" in shown.stdout, shown.stdout
        other = run(["ask", question, "--user", "dr-okafor", "--generator", "llama-cpp"], data)
        assert other.returncode == 2 and "stop it to use llama-cpp" in " ".join(
            other.stderr.split()
        )

        golden = tmp_path / "golden.jsonl"
        golden.write_text(
            json.dumps({"question": question, "doc_id": "hand-hygiene-policy",
                        "quote": "Rub for 20 to 30 seconds until dry"}) + "\n"
            + json.dumps({"question": "How do I book annual leave?", "answerable": False})
            + "\n"
        )  # fmt: skip
        gates = tmp_path / "gates.toml"
        gates.write_text("[minimum]\nanswer_contains_gold = 1.0\ncorrect_refusal_rate = 1.0\n")
        evaluated = run(
            ["eval", "--golden", str(golden), "--gates", str(gates),
             "--report", str(tmp_path / "report"), "--user", "dr-okafor"], data,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        figures = json.loads((tmp_path / "report" / "golden.json").read_text())
        assert len(figures["per_question"]) == 2 and figures["asked_as"] == "dr-okafor"
        assert figures["figures"]["answer_contains_gold"] == 1.0
        every = run(
            ["eval", "--golden", str(golden), "--report", str(tmp_path / "every"),
             "--every-user"], data,
        )  # fmt: skip
        assert every.returncode == 0, every.stdout + every.stderr
        asked_as = {json.loads(p.read_text())["asked_as"]
                    for p in (tmp_path / "every").glob("*/golden.json")}  # fmt: skip
        assert len(asked_as) == 7 and "dr-okafor" in asked_as
        missing = run(["eval", "--golden", str(tmp_path / "gates.toml")], data)
        assert missing.returncode == 2, missing.stderr  # not a golden file: said, not a crash
        stranger = run(["eval", "--golden", str(golden), "--user", "nobody-here"], data)
        assert stranger.returncode == 2 and "appliance users list" in " ".join(
            stranger.stderr.split()
        )

        removed = run(["docs", "remove", "isolation-precautions"], data)
        assert removed.returncode == 0, removed.stderr
        ready = httpx.get(f"{base}/ready", timeout=30).json()
        assert ready["status"] == "ready"
        listed = run(["search", "contact precautions apron", "--user", "dr-okafor", "--json"], data)
        docs = {row["doc_id"] for row in json.loads(listed.stdout)["results"]}
        assert "isolation-precautions" not in docs

        wrong = httpx.post(
            f"{base}/api/operator/remove",
            json={"doc_ids": ["hand-hygiene-policy"]},
            headers={"authorization": "Bearer not-the-token"},
            timeout=30,
        )
        assert wrong.status_code == 401
    assert current(data) is None  # the record goes with the service


def test_without_a_service_the_command_opens_the_stores_itself(tmp_path: Path) -> None:
    ingested = run(["ingest", str(SAMPLE_CORPUS / "hand-hygiene-policy.md")], tmp_path / "data")
    assert ingested.returncode == 0, ingested.stderr
    assert "holds the stores" not in ingested.stderr and "1 added" in ingested.stdout


@pytest.mark.skipif(not SLOW, reason="slow mode (APPLIANCE_SLOW_TESTS=1): the whole demo")
def test_while_the_demo_serves_a_command_goes_through_it(tmp_path: Path) -> None:
    """The README's first command: the demo ingests, answers, then serves on the port it
    was given, and the operator's search finds it there."""
    data = tmp_path / "data"
    port = free_port()
    demo = subprocess.Popen(
        [str(BIN / "appliance-web"), "demo", "--port", str(port)], env=environment(data),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/ready", attempts=3000)
        found = run(["search", "alcohol gel hand rub", "--user", "dr-okafor", "--json"], data)
        assert found.returncode == 0, found.stderr
        assert "holds the stores" in found.stderr
        assert json.loads(found.stdout)["results"][0]["doc_id"] == "hand-hygiene-policy"
    finally:
        demo.terminate()
        demo.wait(timeout=90)
