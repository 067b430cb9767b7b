"""Several worker processes of the web service: what one worker knows, every worker knows
(a sign-in, a question count, an ingestion job), because it lives in the data
directory's shared file; and the service refuses more than one worker on stores that
admit one process."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from appliance.engines import Appliance
from appliance.settings import ServiceSettings
from services.accounts import LocalAccounts
from services.app import create_app
from services.cli import app as web_cli
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, finished_job, make_settings

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def two_workers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps on one data directory, as two worker processes are. They share one
    appliance here only because the embedded stores admit one process; everything the
    workers share goes through the data directory."""
    data = tmp_path_factory.mktemp("workers") / "data"
    (data / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, data / "access" / "subjects.toml")
    accounts = LocalAccounts(data / "access" / "accounts.json")
    for user in ("dr-okafor", "it-santos"):
        accounts.set_password(user, PASSWORD)
    services = ServiceSettings(secure_cookies=False, ask_per_minute=3)
    settings = make_settings(data, services=services)
    appliance = Appliance(settings)
    assert not appliance.ingestor.ingest([SAMPLE_CORPUS / "hand-hygiene-policy.md"]).failed
    first, second = create_app(settings, appliance), create_app(settings, appliance)
    with TestClient(first) as one, TestClient(second) as other:
        yield one, other
    appliance.close()


def sign_in(client: TestClient, user: str) -> None:
    client.cookies.clear()
    client.get("/health")
    response = client.post(
        "/api/login",
        json={"user_id": user, "password": PASSWORD},
        headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
    )
    assert response.status_code == 200, response.text


def signed_in_on_both(one: TestClient, other: TestClient, user: str) -> None:
    """Signed in on the first worker; the browser then sends the same cookies, whichever
    worker the balancer picks."""
    sign_in(one, user)
    other.cookies.clear()
    for name, value in one.cookies.items():
        other.cookies.set(name, value)


def test_a_sign_in_on_one_worker_holds_on_the_other(
    two_workers: tuple[TestClient, TestClient],
) -> None:
    one, other = two_workers
    signed_in_on_both(one, other, "dr-okafor")
    assert other.get("/api/me").json()["user_id"] == "dr-okafor"
    token = {"x-csrftoken": other.cookies.get("csrftoken", "")}
    assert other.post("/api/logout", headers=token).status_code in (200, 201, 204)
    assert one.get("/api/me").status_code == 401  # signed out everywhere


def test_the_question_limit_counts_across_workers(
    two_workers: tuple[TestClient, TestClient],
) -> None:
    one, other = two_workers
    signed_in_on_both(one, other, "dr-okafor")
    codes = []
    for n in range(5):
        client = one if n % 2 == 0 else other
        token = {"x-csrftoken": client.cookies.get("csrftoken", "")}
        asked = client.post(
            "/api/ask", json={"question": "How long should hands be rubbed?"}, headers=token
        )
        codes.append(asked.status_code)
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429], codes


def test_a_job_started_on_one_worker_is_followed_on_the_other(
    two_workers: tuple[TestClient, TestClient],
) -> None:
    one, other = two_workers
    signed_in_on_both(one, other, "it-santos")
    document = (
        b"---\ndoc_id: ward-fridge-policy\ntitle: Ward Fridge Policy\nsensitivity: internal\n"
        b"departments: [all]\n---\n# Ward Fridge Policy\n\nRecord the fridge temperature twice a day.\n"
    )
    token = {"x-csrftoken": one.cookies.get("csrftoken", "")}
    accepted = one.post(
        "/api/documents", files={"data": ("fridge.md", document, "text/markdown")}, headers=token
    )
    assert accepted.status_code == 202, accepted.text
    job = finished_job(other, accepted.json()["job_id"])
    assert job["state"] == "done" and job["outcomes"][0]["status"] == "added"


def test_more_than_one_worker_on_the_embedded_stores_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        web_cli, ["serve", "--workers", "2"], env={"APPLIANCE_DATA_DIR": str(tmp_path)}
    )
    assert result.exit_code == 2
    assert "tantivy" in result.output and "admits one process" in result.output


def test_more_than_one_worker_with_the_embedded_graph_is_refused(tmp_path: Path) -> None:
    """Store servers for BM25 and vectors are not enough: the graph's embedded server
    locks its database too, so several workers need Neo4j (or no graph)."""
    servers = {"APPLIANCE_DATA_DIR": str(tmp_path), "APPLIANCE_GRAPH__ENGINE": "arcadedb",
               "APPLIANCE_LEXICAL__ENGINE": "opensearch", "APPLIANCE_VECTORS__ENGINE": "qdrant",
               "APPLIANCE_VECTORS__QDRANT__URL": "http://127.0.0.1:1"}  # fmt: skip
    result = CliRunner().invoke(web_cli, ["serve", "--workers", "2"], env=servers)
    assert result.exit_code == 2
    assert "ArcadeDB" in result.output and "set graph.engine" in result.output
