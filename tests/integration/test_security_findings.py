"""Regression tests for the findings of the security review, on the real web service
(sample corpus, real engines, real audit log): sessions, break-the-glass, audited document
views, bad input, operations endpoints, uploads and private data files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from litestar.testing import TestClient

from appliance.engines import Appliance
from appliance.settings import ServiceSettings
from services.accounts import LocalAccounts
from services.app import create_app
from tests.conftest import (
    SAMPLE_CORPUS,
    SAMPLE_SUBJECTS,
    audit_entries,
    fresh_sign_in_minute,
    make_settings,
    readiness,
)

PASSWORD = "correct horse battery"
USERS = ("dr-okafor", "nurse-lindqvist", "audit-ito", "it-santos", "dr-shah")
REASON = "cardiac arrest in resus, patient unconscious and unidentified history"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("security") / "data"
    (root / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, root / "access" / "subjects.toml")
    accounts = LocalAccounts(root / "access" / "accounts.json")
    for user in USERS:
        accounts.set_password(user, PASSWORD)
    with Appliance(make_settings(root)) as appliance:
        assert not appliance.ingestor.ingest([SAMPLE_CORPUS]).failed
    return root


def _services(**overrides: object) -> ServiceSettings:
    defaults: dict[str, object] = {
        "secure_cookies": False,  # the test client speaks plain HTTP
        "login_per_minute": 50,
        "max_request_bytes": 8 * 1024,
        "max_upload_bytes": 64 * 1024,
        "operations_addresses": ["testclient"],
    }
    return ServiceSettings(**{**defaults, **overrides})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def appliance(data_dir: Path) -> Iterator[Appliance]:
    with Appliance(make_settings(data_dir, services=_services())) as opened:
        yield opened


@pytest.fixture(scope="module")
def client(appliance: Appliance) -> Iterator[TestClient]:
    with TestClient(create_app(appliance.settings, appliance)) as test_client:
        yield test_client


def sign_in(client: TestClient, user: str, password: str = PASSWORD) -> int:
    client.cookies.clear()
    client.get("/health")  # the pre-sign-in CSRF cookie
    response = client.post(
        "/api/login", json={"user_id": user, "password": password}, headers=csrf(client)
    )
    return response.status_code


@contextlib.contextmanager
def _another_client(client: TestClient) -> Iterator[TestClient]:
    """A second browser on the same running app (entering a TestClient would run the
    app's shutdown again when it leaves)."""
    yield TestClient(client.app)


def csrf(client: TestClient) -> dict[str, str]:
    return {"x-csrftoken": client.cookies.get("csrftoken", "")}


def finished_job(client: TestClient, job_id: str) -> dict:  # type: ignore[type-arg]
    """An upload job's report once it is done or failed (at most a minute)."""
    for _ in range(300):
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            return job  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still {job['state']} after a minute")


def entries_since(data_dir: Path, count: int, event_type: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    fresh = audit_entries(data_dir)[count:]
    return [e for e in fresh if event_type is None or e["type"] == event_type]


# -- sessions -------------------------------------------------------------------------------


def test_a_session_id_the_client_chose_is_never_adopted(client: TestClient) -> None:
    client.cookies.clear()
    client.cookies.set("session", "attacker-chosen-id")
    client.get("/health")
    response = client.post(
        "/api/login", json={"user_id": "dr-okafor", "password": PASSWORD}, headers=csrf(client)
    )
    assert response.status_code == 200
    issued = response.cookies.get("session")
    assert issued and issued != "attacker-chosen-id"
    with _another_client(client) as attacker:
        attacker.cookies.set("session", "attacker-chosen-id")
        assert attacker.get("/api/me").status_code == 401


def test_sign_in_issues_a_fresh_id_and_ends_the_previous_session(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    first = client.cookies.get("session")
    token = client.cookies.get("csrftoken")
    response = client.post(
        "/api/login", json={"user_id": "dr-okafor", "password": PASSWORD},
        headers={"x-csrftoken": token or ""},
    )  # fmt: skip
    assert response.status_code == 200
    second = client.cookies.get("session")
    assert second and second != first
    with _another_client(client) as old:
        old.cookies.set("session", first or "")
        assert old.get("/api/me").status_code == 401


def test_no_session_exists_before_sign_in(client: TestClient) -> None:
    sessions = client.app.state.service.sessions
    before = len(sessions)
    with _another_client(client) as anonymous:
        for path in ("/health", "/login", "/", "/api/me", "/api/schema/openapi.json"):
            response = anonymous.get(path)
            assert "session" not in response.cookies
    assert len(sessions) == before


def test_over_https_the_cookie_is_a_host_only_secure_session(appliance: Appliance) -> None:
    settings = make_settings(appliance.settings.data_dir, services=_services(secure_cookies=True))
    with TestClient(create_app(settings, appliance), base_url="https://testserver") as secure:
        secure.get("/health")
        response = secure.post(
            "/api/login", json={"user_id": "dr-okafor", "password": PASSWORD},
            headers=csrf(secure),
        )  # fmt: skip
    assert response.status_code == 200
    cookie = next(v for v in response.headers.get_list("set-cookie") if "session=" in v)
    assert cookie.startswith("__Host-session=")
    assert "Secure" in cookie and "HttpOnly" in cookie and "Path=/" in cookie
    assert "Domain" not in cookie


def test_removing_an_account_or_changing_its_password_ends_its_sessions(
    client: TestClient, data_dir: Path
) -> None:
    accounts = LocalAccounts(data_dir / "access" / "accounts.json")  # as the CLI does
    assert sign_in(client, "dr-shah") == 200
    assert client.get("/api/me").status_code == 200
    accounts.set_password("dr-shah", "a completely new password")
    assert client.get("/api/me").status_code == 401
    accounts.set_password("dr-shah", PASSWORD)
    assert sign_in(client, "dr-shah") == 200
    accounts.remove("dr-shah")
    assert client.get("/api/me").status_code == 401
    accounts.set_password("dr-shah", PASSWORD)


def test_the_csrf_token_belongs_to_one_session(client: TestClient) -> None:
    """A token taken from another session (cookie and header alike, as an attacker who
    can plant a cookie would send them) does not pass for this one."""
    with _another_client(client) as other:
        assert sign_in(other, "nurse-lindqvist") == 200
        foreign_token = other.cookies.get("csrftoken", "")
    assert sign_in(client, "dr-okafor") == 200
    own_token = client.cookies.get("csrftoken", "")
    question = {"question": "How long should I rub my hands with alcohol gel?"}
    client.cookies.set("csrftoken", foreign_token)
    forged = client.post("/api/ask", json=question, headers={"x-csrftoken": foreign_token})
    assert forged.status_code == 403
    client.cookies.set("csrftoken", own_token)
    assert (
        client.post("/api/ask", json=question, headers={"x-csrftoken": own_token}).status_code
        == 200
    )


def test_the_csrf_check_and_the_identity_check_read_the_same_authorization(
    client: TestClient, data_dir: Path
) -> None:
    """A signed-in session, no CSRF token, and authorization headers that put a bearer
    token last: the request is refused, not run on the session's authority."""
    assert sign_in(client, "dr-okafor") == 200
    count = len(audit_entries(data_dir))
    body = json.dumps({"question": "How long should I rub my hands?"}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"cookie", f"session={client.cookies.get('session')}".encode()),
        (b"authorization", b"Basic eDp5"),
        (b"authorization", b"Bearer a.b.c"),  # two separate headers, as a raw client sends
    ]
    assert _raw_post(client.app, "/api/ask", headers, body) in (400, 403)
    assert entries_since(data_dir, count, "question") == []


def _raw_post(app: object, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> int:
    """One request straight into the ASGI app: the test client would merge the
    repeated header into one."""
    sent: list[dict] = []  # type: ignore[type-arg]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": headers, "client": ("testclient", 50000),
        "server": ("testserver", 80),
    }  # fmt: skip

    async def receive() -> dict:  # type: ignore[type-arg]
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:  # type: ignore[type-arg]
        sent.append(message)

    anyio.run(app, scope, receive, send)  # type: ignore[arg-type]
    return int(next(m["status"] for m in sent if m["type"] == "http.response.start"))


def test_failed_sign_ins_are_limited_per_account_whatever_the_address(
    client: TestClient, data_dir: Path
) -> None:
    settings = make_settings(data_dir, services=_services(login_per_minute=3))
    app = create_app(settings, client.app.state.service.appliance)
    fresh_sign_in_minute(app)
    with TestClient(app) as limited:
        codes = []
        for n in range(5):
            limited.cookies.clear()
            limited.get("/health", headers={"x-forwarded-for": f"10.0.0.{n}"})
            codes.append(
                limited.post(
                    "/api/login", json={"user_id": "it-santos", "password": "wrong password!"},
                    headers={**csrf(limited), "x-forwarded-for": f"10.0.0.{n}"},
                ).status_code
            )  # fmt: skip
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
    from services.app import uvicorn_options

    assert uvicorn_options(settings)["proxy_headers"] is False  # no header picks the address


def test_signing_in_and_out_and_failing_are_audited(client: TestClient, data_dir: Path) -> None:
    count = len(audit_entries(data_dir))
    assert sign_in(client, "audit-ito", "not the password at all") == 401
    assert sign_in(client, "audit-ito") == 200
    assert client.post("/api/logout", headers=csrf(client)).status_code == 200
    fresh = entries_since(data_dir, count)
    kinds = [(e["type"], e["actor"]["user"]) for e in fresh]
    assert kinds == [
        ("sign_in_failed", "anonymous"), ("sign_in", "audit-ito"), ("sign_out", "audit-ito"),
    ]  # fmt: skip
    assert fresh[0]["details"]["attempted_user"] == "audit-ito"
    assert fresh[1]["actor"]["roles"] and fresh[1]["request_id"]


# -- documents and break-the-glass ------------------------------------------------------------


def test_every_document_view_is_audited_with_why(client: TestClient, data_dir: Path) -> None:
    assert sign_in(client, "nurse-lindqvist") == 200
    count = len(audit_entries(data_dir))
    for _ in range(3):
        assert client.get("/api/documents/care-plan-p10234").status_code == 200
    cited = client.get(
        "/api/documents/hand-hygiene-policy", params={"cited_in": "ward-7-request-0001"}
    )
    assert cited.status_code == 200
    views = entries_since(data_dir, count, "document_view")
    assert [v["details"]["why"] for v in views] == ["direct", "direct", "direct", "citation"]
    assert views[0]["actor"]["user"] == "nurse-lindqvist"
    assert views[0]["details"]["patient_id"] == "P-10234"
    assert views[-1]["details"]["cited_in"] == "ward-7-request-0001"


def test_a_forbidden_and_a_missing_document_take_the_same_steps(appliance: Appliance) -> None:
    """Same answer and same work (the access scope is resolved either way), so timing
    does not tell which patient documents exist."""
    guard = appliance.guard
    subject = appliance.subjects.get("dr-okafor")
    calls: list[str] = []
    original = guard.scope

    def counted(*args: object, **kwargs: object) -> object:
        calls.append("scope")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    guard.scope = counted  # type: ignore[method-assign]
    try:
        outcomes = []
        for doc_id in ("care-plan-p10234", "care-plan-p99999"):
            calls.clear()
            with pytest.raises(Exception) as raised:
                guard.document_view(subject, doc_id)
            outcomes.append((type(raised.value), str(raised.value).replace(doc_id, "ID"), calls[:]))
    finally:
        del guard.scope
    assert outcomes[0] == outcomes[1] and outcomes[0][2] == ["scope"]


def test_break_the_glass_opens_only_the_named_patient_and_reports_every_view(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    assert client.get("/api/documents/care-plan-p10234").status_code == 404
    session_before = client.cookies.get("session")
    count = len(audit_entries(data_dir))
    started = client.post(
        "/api/break-glass", json={"reason": REASON, "patient_id": "P-10234", "minutes": 5},
        headers={**csrf(client), "x-request-id": "resus-bay-2-000001"},
    )  # fmt: skip
    assert started.status_code == 200, started.text
    assert client.cookies.get("session") != session_before  # privilege changed: new id
    try:
        assert client.get("/api/me").json()["break_glass_patient"] == "P-10234"
        assert client.get("/api/documents/care-plan-p10234").status_code == 200
        assert client.get("/api/documents/care-plan-p20871").status_code == 404
        stacked = client.post(
            "/api/break-glass", json={"reason": REASON, "patient_id": "P-20871"},
            headers=csrf(client),
        )  # fmt: skip
        assert stacked.status_code == 400 and "already open" in stacked.json()["detail"]
    finally:
        ended = client.delete("/api/break-glass", headers=csrf(client))
    assert ended.json() == {"ended": True}
    assert client.get("/api/me").json()["break_glass_until"] is None
    assert client.get("/api/documents/care-plan-p10234").status_code == 404
    fresh = entries_since(data_dir, count)
    granted = next(e for e in fresh if e["type"] == "break_glass_granted")
    assert granted["request_id"] == "resus-bay-2-000001" and granted["actor"]["roles"]
    assert granted["details"]["patient_id"] == "P-10234"
    views = [e for e in fresh if e["type"] == "document_view"]
    assert [v["details"]["why"] for v in views] == ["break-the-glass"]
    assert views[0]["details"]["break_glass_grant"] == granted["details"]["grant_id"]


@pytest.mark.parametrize(
    ("reason", "minutes", "patient", "says"),
    [
        ("x" * 20, 5, "P-10234", "different words"),
        ("cardiac arrest " * 400, 5, "P-10234", "at most"),
        (REASON, 2**63, "P-10234", "minutes is between"),
        (REASON, 0, "P-10234", "minutes is between"),
        (REASON, 5, "", "names the patient"),
        (REASON, 5, "P 10234; drop", "names the patient"),
    ],
)
def test_a_break_the_glass_request_that_cannot_be_granted_is_a_clear_400(
    client: TestClient, reason: str, minutes: int, patient: str, says: str
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    response = client.post(
        "/api/break-glass", json={"reason": reason, "patient_id": patient, "minutes": minutes},
        headers=csrf(client),
    )  # fmt: skip
    assert response.status_code == 400 and says in response.json()["detail"]
    assert client.get("/api/me").json()["break_glass_until"] is None


# -- the compliance office's reading is itself audited ---------------------------------------


def test_audit_searches_record_views_and_exports_are_audited(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "audit-ito") == 200
    count = len(audit_entries(data_dir))
    assert client.get("/api/audit/records", params={"user": "dr-okafor"}).status_code == 200
    assert client.get("/api/audit/records/0").status_code == 200
    assert client.get("/api/audit/export").status_code == 200
    reviews = entries_since(data_dir, count, "audit_review")
    assert [r["details"]["action"] for r in reviews] == ["search", "view record", "export"]
    assert reviews[0]["details"]["query"]["user"] == "dr-okafor"
    assert all(r["actor"]["user"] == "audit-ito" for r in reviews)


# -- bad input: a clear 4xx, never a 500 ------------------------------------------------------


def test_malformed_requests_get_a_clear_4xx_never_a_500(client: TestClient) -> None:
    client.cookies.clear()
    client.get("/health")
    deep = b"[" * 10_000 + b"]" * 10_000
    login = client.post(
        "/api/login", content=deep, headers={**csrf(client), "content-type": "application/json"}
    )
    assert login.status_code == 400 and "nested" in login.json()["detail"]
    assert sign_in(client, "it-santos") == 200
    empty = client.post(
        "/api/documents", content=b"",
        headers={**csrf(client), "content-type": "multipart/form-data; boundary=x"},
    )  # fmt: skip
    assert 400 <= empty.status_code < 500
    assert sign_in(client, "audit-ito") == 200
    assert client.get("/api/audit/records/-1").status_code == 404
    assert "Traceback" not in login.text + empty.text


def test_uploads_keep_every_file_and_report_every_outcome(client: TestClient) -> None:
    assert sign_in(client, "it-santos") == 200
    first = b"---\ndoc_id: ward-a-note\ntitle: Ward A Note\n---\n# Ward A\n\nCheck the fridge.\n"
    second = b"---\ndoc_id: ward-b-note\ntitle: Ward B Note\n---\n# Ward B\n\nCheck the trolley.\n"
    files = [
        ("data", ("note.md", first, "text/markdown")),
        ("data", ("note.md", second, "text/markdown")),
        ("data", ("setup.exe", b"MZ\x90\x00", "application/octet-stream")),
        ("data", ("n" * 300 + ".md", first.replace(b"ward-a", b"ward-c"), "text/markdown")),
    ]
    accepted = client.post("/api/documents", files=files, headers=csrf(client))
    assert accepted.status_code == 202, accepted.text
    names = accepted.json()["files"]
    assert len(set(names)) == 4 and all(len(n) <= 120 for n in names)
    job = finished_job(client, accepted.json()["job_id"])
    statuses = sorted(o["status"] for o in job["outcomes"])
    assert statuses == ["added", "added", "added", "skipped"]
    assert job["done"] == job["total"] == 4


def test_questions_are_answered_while_an_upload_is_being_ingested(appliance: Appliance) -> None:
    """A document is read in the document reader, outside the engines: a question
    asked while a long manual is being read is answered before that one document is
    written (the engines are held only for its writes)."""
    settings = make_settings(
        appliance.settings.data_dir, services=_services(max_upload_bytes=8 * 1024 * 1024)
    )
    paragraphs = "".join(
        f"Paragraph {n} of the ward manual says the trolley is checked at {n % 24}:00.\n\n"
        for n in range(1500)
    )
    manual = ("manual.md", f"# Ward Manual\n\n{paragraphs}".encode(), "text/markdown")
    with TestClient(create_app(settings, appliance)) as it_office:
        assert sign_in(it_office, "it-santos") == 200
        accepted = it_office.post(
            "/api/documents", files=[("data", manual)], headers=csrf(it_office)
        )
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        with _another_client(it_office) as ward:
            assert sign_in(ward, "dr-okafor") == 200
            while it_office.get(f"/api/jobs/{job_id}").json()["state"] != "running":
                time.sleep(0.05)
            asked = ward.post(
                "/api/ask", json={"question": "How long should I rub my hands with alcohol gel?"},
                headers=csrf(ward),
            )  # fmt: skip
            progress = it_office.get(f"/api/jobs/{job_id}").json()
        assert asked.status_code == 200 and not asked.json()["refused"]
        assert progress["done"] == 0  # answered while the one document was still being read
        job = finished_job(it_office, job_id)
        assert job["state"] == "done" and job["outcomes"][0]["status"] == "added"
        assert job["outcomes"][0]["chunks"] > 50


def test_a_document_id_collision_names_no_server_path(client: TestClient, data_dir: Path) -> None:
    assert sign_in(client, "it-santos") == 200
    clash = b"---\ndoc_id: care-plan-p10234\ntitle: Something Else\n---\n# X\n\nText here.\n"
    accepted = client.post(
        "/api/documents", files={"data": ("clash.md", clash, "text/markdown")},
        headers=csrf(client),
    )  # fmt: skip
    job = finished_job(client, accepted.json()["job_id"])
    error = job["outcomes"][0]["error"]
    assert job["outcomes"][0]["status"] == "failed"
    assert str(data_dir) not in error and "/" not in error.split("'")[0]
    assert "sample_corpus" not in json.dumps(job)


# -- operations ------------------------------------------------------------------------------


def test_metrics_and_readiness_answer_only_the_configured_scraper(
    appliance: Appliance, tmp_path: Path
) -> None:
    token_file = tmp_path / "operations-token"
    token_file.write_text("scrape-me-0123456789")
    settings = make_settings(
        appliance.settings.data_dir,
        services=_services(operations_addresses=["10.1.2.3"], operations_token_file=token_file),
    )
    with TestClient(create_app(settings, appliance)) as outsider:
        assert outsider.get("/metrics").status_code == 404
        assert outsider.get("/ready").status_code == 404
        assert outsider.get("/health").status_code == 200
        opened = readiness(outsider, {"authorization": "Bearer scrape-me-0123456789"})
        assert opened.status_code == 200 and opened.json()["status"] == "ready"


def test_the_schema_documents_the_error_responses(client: TestClient) -> None:
    ask = client.get("/api/schema/openapi.json").json()["paths"]["/api/ask"]["post"]
    assert {"400", "401", "403", "413", "429", "500"} <= set(ask["responses"])


def test_data_files_are_private_to_the_service_account(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh"
    previous = os.umask(0o022)
    try:
        with Appliance(make_settings(data_dir)) as fresh:
            fresh.audit_trail.signed_out("nobody", (), "test", "umask-check-0001")
            assert fresh.break_glass.active("nobody") is None
            assert fresh.catalog.document("nothing") is None
    finally:
        os.umask(previous)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    written = [p for p in data_dir.rglob("*") if p.is_file() and not p.is_symlink()]
    assert written
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_a_cookie_or_token_of_any_bytes_is_refused_not_a_crash(client: TestClient) -> None:
    client.cookies.clear()
    for cookie in ("csrftoken=é.ü", "session=\u00ff\u00fe; csrftoken=x", "csrftoken=;;;=="):
        response = client.post(
            "/api/login", json={"user_id": "dr-okafor", "password": PASSWORD},
            headers={"cookie": cookie.encode("latin-1"), "x-csrftoken": "é.ü".encode("latin-1")},
        )  # fmt: skip
        assert response.status_code == 403, (cookie, response.text)
