"""Shared fixtures: real models, real engines, real small corpora."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appliance.access.rules import Subject
from appliance.engines import Appliance
from appliance.nlp.embedder import Embedder
from appliance.settings import Settings

SAMPLE_CORPUS = Path(__file__).resolve().parent.parent / "appliance" / "sample_corpus" / "documents"
SAMPLE_SUBJECTS = SAMPLE_CORPUS.parent / "subjects.toml"
SLOW = os.environ.get("APPLIANCE_SLOW_TESTS") == "1"

# Tests run without the knowledge graph unless they ask for it: with the product's
# default, every appliance a test builds would start its own ArcadeDB (a JVM). The
# end-to-end and browser services run the product's default (see tests/e2e/service.py).
os.environ.setdefault("APPLIANCE_GRAPH__ENGINE", "none")

SAMPLE_READER = Subject(
    user_id="test-reader",
    roles=("department_head",),
    departments=(
        "cardiology", "coding", "emergency", "endocrinology", "geriatrics", "haematology",
        "hr", "icu", "infection-control", "it", "neurology", "nursing", "obstetrics",
        "occupational-health", "oncology", "pediatrics", "pharmacy", "psychiatry", "surgery",
    ),
    care_team=("P-10234", "P-20871"),
)  # fmt: skip
"""Under the shipped policy, a subject who may read every sample document."""


def audit_entries(data_dir: Path, event_type: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    """The entries (of one type, or all) in a data directory's audit log, oldest first."""
    import json

    from audit.reader import LogReader

    records = LogReader(data_dir / "audit").records()
    entries = [json.loads(r.entry) for r in records]
    return [e for e in entries if event_type is None or e["type"] == event_type]


def finished_job(client: object, job_id: str) -> dict:  # type: ignore[type-arg]
    """An ingestion job's state once it is done or failed (polled for up to a minute)."""
    import time

    for _ in range(300):
        job: dict = client.get(f"/api/jobs/{job_id}").json()  # type: ignore[attr-defined,type-arg]
        if job["state"] in ("done", "failed"):
            break
        time.sleep(0.2)
    return job


def free_port() -> int:
    """A port nothing listens on now, for a server a test starts."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_answers(url: str, attempts: int = 600, pause: float = 0.2) -> None:
    """Until a server just started answers ``url`` with 200 (models load first)."""
    import time

    import httpx

    for _ in range(attempts):
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(pause)


def fresh_sign_in_minute(app: object) -> None:
    """Apps on one data directory keep their sign-in and rate windows in its shared file,
    as worker processes do: a test of a limit starts from a minute with nothing in it."""
    with app.state.service.shared.writing() as shared:  # type: ignore[attr-defined]
        shared.execute("DELETE FROM rate_windows")
        shared.execute("DELETE FROM sign_in_failures")


def readiness(client: Any, headers: dict[str, str] | None = None) -> Any:
    """``/ready`` once the service has warmed up (it says "warming up" until its models
    have run once); the response, whatever it then says."""
    import time

    for _ in range(600):
        response = client.get("/ready", headers=headers or {})
        if response.status_code != 503 or response.json().get("status") != "warming up":
            return response
        time.sleep(0.2)
    raise AssertionError("the service was still warming up after 120 s")


def scanned_pdf(lines: list[str]) -> bytes:
    """A one-page PDF that is only an image of ``lines`` (a scan: no text layer), drawn
    at 300 dpi in Pillow's own font."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (2480, 160 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=44)
    for number, line in enumerate(lines):
        draw.text((150, 100 + 70 * number), line, fill=0, font=font)
    out = io.BytesIO()
    page.save(out, "PDF", resolution=300)
    return out.getvalue()


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    return Settings(data_dir=data_dir, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The real all-MiniLM-L6-v2, resolved through the registry, loaded once."""
    with Appliance(make_settings(tmp_path_factory.mktemp("embedder"))) as appliance:
        return appliance.embedder


@pytest.fixture(scope="session")
def sample_appliance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Appliance]:
    """The bundled sample corpus ingested once into a session-wide data directory."""
    appliance = Appliance(make_settings(tmp_path_factory.mktemp("sample-data")))
    report = appliance.ingestor.ingest([SAMPLE_CORPUS])
    assert not report.failed, report.failed
    yield appliance
    appliance.close()


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    """A private, editable copy of a few sample documents."""
    target = tmp_path / "corpus"
    target.mkdir()
    for name in (
        "hand-hygiene-policy.md",
        "isolation-precautions.md",
        "diabetes-coding-guide.md",
        "visiting-hours.html",
        "visiting-hours.html.meta.yaml",
        "antimicrobial-formulary.pdf",
        "antimicrobial-formulary.pdf.meta.yaml",
    ):
        shutil.copy(SAMPLE_CORPUS / name, target / name)
    return target


@pytest.fixture(scope="session")
def spacy_pipeline(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The real en_core_web_md pipeline, through the registry."""
    with Appliance(make_settings(tmp_path_factory.mktemp("spacy"))) as appliance:
        return appliance.registry.load("spacy-vectors")


@pytest.fixture(scope="session")
def graph_builder(spacy_pipeline):  # type: ignore[no-untyped-def]
    """The real spaCy pipeline wrapped in the graph builder."""
    from appliance.nlp.parse_graph import ParseGraphBuilder

    return ParseGraphBuilder(spacy_pipeline)
