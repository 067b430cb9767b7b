"""The web service killed (SIGKILL: no shutdown runs) at a random moment of an upload
loses nothing: its document reader dies with it, the next start takes what was half
written out of the stores, and the next upload finishes every document the killed one
left pending. One kill in the default suite, more in the slow mode."""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from appliance.engines import Appliance
from tests.conftest import SAMPLE_CORPUS, SLOW, finished_job, make_settings
from tests.e2e.service import BIN, prepare_data, running_service, signed_in, upload

PASSWORD = "kill test password"
KILLS = 4 if SLOW else 1
READER = "appliance.document_reader"


@contextmanager
def service(data: Path) -> Iterator[tuple[subprocess.Popen[str], httpx.Client]]:
    with running_service(data) as (server, base), signed_in(base, PASSWORD) as client:
        yield server, client


def files(paths: list[Path]) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in paths]


def readers_of(parent: int) -> list[int]:
    """The document reader processes the service started."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if READER in command and f"\nPPid:\t{parent}\n" in status:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("attempt", range(KILLS))
def test_a_service_killed_during_an_upload_loses_nothing(attempt: int, tmp_path: Path) -> None:
    data = tmp_path / "data"
    prepare_data(data, PASSWORD)
    manual = tmp_path / "ward-manual.md"
    manual.write_text(
        "# Ward Manual\n\n"
        + "".join(f"Step {n}: the trolley is checked at {n % 24}:00.\n\n" for n in range(600))
    )
    documents = [
        SAMPLE_CORPUS / name
        for name in ("hand-hygiene-policy.md", "isolation-precautions.md", "visiting-hours.html",
                     "diabetes-coding-guide.md")
    ] + [manual]  # fmt: skip
    rng = random.Random(attempt)

    with service(data) as (server, client):
        upload(client, files(documents))
        for _ in range(600):  # until the reader runs: the kill lands in reading or writing
            readers = readers_of(server.pid)
            if readers:
                break
            time.sleep(0.1)
        assert readers, "the service started no document reader"
        time.sleep(rng.uniform(0.0, 8.0))
        server.kill()
        server.wait(timeout=30)
    for _ in range(100):  # the reader follows its parent (PR_SET_PDEATHSIG)
        if not any(alive(pid) for pid in readers):
            break
        time.sleep(0.1)
    assert not any(alive(pid) for pid in readers), "the document reader outlived the service"

    late = tmp_path / "late-note.md"
    late.write_text("# Late Note\n\nThe fridge is checked daily.\n")
    with service(data) as (_server, client):
        job = finished_job(client, upload(client, files([late])))
        assert job["state"] == "done", job
    verified = subprocess.run(
        [str(BIN / "audit"), "--dir", str(data / "audit"), "verify"], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout
    with Appliance(make_settings(data)) as appliance:
        assert appliance.catalog.pending() == []
        records = appliance.catalog.documents()
        assert {r.state for r in records} == {"indexed"}
        assert "late-note" in {r.doc_id for r in records}
        for record in records:
            ids = appliance.catalog.chunk_ids_of(record.doc_id)
            assert ids == appliance.lexical.chunk_ids_of(record.doc_id)
            assert ids == appliance.vectors.chunk_ids_of(record.doc_id)
        indexed = sum(r.chunk_count for r in records)
        assert appliance.lexical.count() == appliance.vectors.count() == indexed
