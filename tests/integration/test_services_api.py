"""The JSON API on the real appliance (sample corpus, real models and stores): sign-in,
CSRF, bearer tokens, roles, limits, bad input, and the audit trail behind it all."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet
from litestar.testing import TestClient
from typer.testing import CliRunner

from appliance.engines import Appliance
from appliance.settings import ServiceSettings
from audit.cli import main as audit_main
from services.accounts import LocalAccounts
from services.app import create_app
from services.cli import app as web_cli
from tests.conftest import (
    SAMPLE_CORPUS,
    SAMPLE_SUBJECTS,
    audit_entries,
    finished_job,
    fresh_sign_in_minute,
    make_settings,
    readiness,
)

PASSWORD = "correct horse battery"
ISSUER, AUDIENCE = "https://idp.hospital.example", "clinical-appliance"


@pytest.fixture(scope="module")
def signing_key() -> ECKey:
    return ECKey.generate_key("P-256", parameters={"kid": "idp-1"})


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, signing_key: ECKey) -> Path:
    root = tmp_path_factory.mktemp("services")
    (root / "data" / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, root / "data" / "access" / "subjects.toml")
    accounts = LocalAccounts(root / "data" / "access" / "accounts.json")
    for user in ("dr-okafor", "audit-ito", "it-santos"):
        accounts.set_password(user, PASSWORD)
    (root / "jwks.json").write_text(json.dumps(KeySet([signing_key]).as_dict(private=False)))
    with Appliance(make_settings(root / "data")) as appliance:
        assert not appliance.ingestor.ingest([SAMPLE_CORPUS]).failed
    return root


@pytest.fixture(scope="module")
def client(data_dir: Path) -> Iterator[TestClient]:
    services = ServiceSettings(
        secure_cookies=False,  # the test client speaks plain HTTP to a non-loopback name
        jwks_file=data_dir / "jwks.json",
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
        max_request_bytes=8 * 1024,
        max_upload_bytes=64 * 1024,
        login_per_minute=50,
        operations_addresses=["testclient"],  # the test client's address: it scrapes
    )
    app = create_app(make_settings(data_dir / "data", services=services))
    with TestClient(app) as test_client:
        yield test_client


def sign_in(client: TestClient, user: str, password: str = PASSWORD) -> int:
    client.cookies.clear()
    client.get("/health")  # the CSRF cookie
    response = client.post(
        "/api/login",
        json={"user_id": user, "password": password},
        headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
    )
    return response.status_code


def csrf(client: TestClient) -> dict[str, str]:
    return {"x-csrftoken": client.cookies.get("csrftoken", "")}


def token(key: ECKey, **claims: object) -> str:
    payload = {"sub": "dr-okafor", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300}
    payload.update(claims)
    return jwt.encode({"alg": "ES256", "kid": "idp-1"}, payload, key)


def test_a_clinician_signs_in_and_gets_a_cited_answer_recorded_under_the_request_id(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    response = client.post(
        "/api/ask",
        json={"question": "How long should I rub my hands with alcohol gel?"},
        headers={**csrf(client), "x-request-id": "ward-7-request-0001"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert response.headers["x-request-id"] == "ward-7-request-0001"
    assert answer["request_id"] == "ward-7-request-0001" and not answer["refused"]
    span = answer["sentences"][0]["citations"][0]
    document = client.get(f"/api/documents/{span['doc_id']}").json()
    assert document["text"][span["start"] : span["end"]] == span["quote"]
    assert document["version"] and document["effective_from"]
    answers = [e for e in audit_entries(data_dir / "data", "answer")
               if e["request_id"] == "ward-7-request-0001"]  # fmt: skip
    assert len(answers) == 1 and answers[0]["actor"]["user"] == "dr-okafor"
    history = client.get("/api/history").json()
    assert history[0]["question"] == "How long should I rub my hands with alcohol gel?"


def test_a_question_the_documents_do_not_answer_is_a_refusal(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    answer = client.post(
        "/api/ask", json={"question": "What time does the staff canteen open?"},
        headers=csrf(client),
    ).json()  # fmt: skip
    assert answer["refused"] and answer["sentences"] == [] and answer["closest_sources"]


def ask(client: TestClient, question: str, **fields: object) -> dict:  # type: ignore[type-arg]
    response = client.post("/api/ask", json={"question": question, **fields}, headers=csrf(client))
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def quotes(answer: dict) -> str:  # type: ignore[type-arg]
    return " ".join(c["quote"] for s in answer["sentences"] for c in s["citations"])


def test_a_follow_up_is_answered_with_the_previous_turns_subject(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    first = ask(client, "What is the dose of glucagon for hypoglycaemia?")
    assert "glucagon 1 mg" in quotes(first)
    alone = ask(client, "and in liver disease?")
    assert alone["follows"] is None  # not said to follow anything: read as written
    follow_up = ask(client, "and in liver disease?", follow_up_of=first["request_id"])
    assert follow_up["follows"] == "What is the dose of glucagon for hypoglycaemia?"
    assert (
        follow_up["read_as"] == "What is the dose of glucagon for hypoglycaemia in liver disease?"
    )
    assert not follow_up["refused"], follow_up
    assert "less effective in patients with liver disease" in quotes(follow_up)
    # the conversation goes on from the question as it was understood
    third = ask(client, "and the route?", follow_up_of=follow_up["request_id"])
    assert third["read_as"] == "What is the route of glucagon for hypoglycaemia in liver disease?"


def test_a_past_answer_reopens_as_it_was_shown_and_only_for_its_asker(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    shown = ask(client, "How long should I rub my hands with alcohol gel?")
    questions = len(audit_entries(data_dir / "data", "question"))
    reopened = client.get(f"/api/history/{shown['request_id']}").json()
    assert len(audit_entries(data_dir / "data", "question")) == questions  # not asked again
    assert reopened["sentences"] == shown["sentences"] and reopened["withheld_sentences"] == 0
    for field in ("question", "refused", "decision", "scope", "generator", "audit_entry"):
        assert reopened[field] == shown[field], field
    assert reopened["asked_at"]
    assert sign_in(client, "audit-ito") == 200
    assert client.get(f"/api/history/{shown['request_id']}").status_code == 404
    refused = client.post(
        "/api/ask", json={"question": "and the time?", "follow_up_of": shown["request_id"]},
        headers=csrf(client),
    )  # fmt: skip
    assert refused.status_code == 400 and "earlier questions" in refused.text


def test_sign_in_failures_say_nothing_about_which_part_was_wrong(client: TestClient) -> None:
    client.cookies.clear()
    client.get("/health")
    wrong = client.post(
        "/api/login", json={"user_id": "dr-okafor", "password": "not the password"},
        headers=csrf(client),
    )  # fmt: skip
    unknown = client.post(
        "/api/login", json={"user_id": "nobody", "password": PASSWORD}, headers=csrf(client)
    )
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    assert client.get("/api/me").status_code == 401  # still signed out


def test_unsafe_requests_without_the_csrf_token_are_refused_and_change_nothing(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    before = len(audit_entries(data_dir / "data"))
    response = client.post("/api/ask", json={"question": "How long should I rub my hands?"})
    assert response.status_code == 403
    forged = client.post(
        "/api/ask", json={"question": "How long?"}, headers={"x-csrftoken": "forged"}
    )
    assert forged.status_code == 403
    assert len(audit_entries(data_dir / "data")) == before


def test_bearer_tokens_from_the_identity_provider(client: TestClient, signing_key: ECKey) -> None:
    client.cookies.clear()
    question = {"question": "Which respirator do staff wear for tuberculosis?"}
    good = client.post(
        "/api/ask", json=question, headers={"authorization": f"Bearer {token(signing_key)}"}
    )
    assert good.status_code == 200, good.text  # no cookie, so no CSRF token needed
    other_key = ECKey.generate_key("P-256", parameters={"kid": "idp-1"})
    for bad in (
        token(signing_key, exp=int(time.time()) - 10),
        token(signing_key, aud="another-service"),
        token(signing_key, iss="https://elsewhere.example"),
        token(signing_key, sub="not-a-directory-user"),
        token(other_key),
        "not.a.jwt",
    ):
        response = client.post(
            "/api/ask", json=question, headers={"authorization": f"Bearer {bad}"}
        )
        assert response.status_code == 401, bad


def test_a_page_one_may_not_see_answers_like_one_that_does_not_exist(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    missing = client.get("/api/no-such-thing")
    for path in ("/api/audit/records", "/api/audit/status", "/api/audit/records/0"):
        forbidden = client.get(path)
        assert (forbidden.status_code, forbidden.json()) == (missing.status_code, missing.json())
    page = client.get("/compliance")
    assert (page.status_code, page.json()) == (404, client.get("/no-such-page").json())


def test_a_compliance_officer_finds_the_question_and_verifies_the_log(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    asked = client.post(
        "/api/ask", json={"question": "What is the alteplase dose for stroke?"},
        headers=csrf(client),
    ).json()  # fmt: skip
    assert sign_in(client, "audit-ito") == 200
    assert client.get("/compliance").status_code == 200
    rows = client.get("/api/audit/records", params={"user": "Dr-Okafor", "event_type": "question"})
    found = [r for r in rows.json()["rows"] if r["request_id"] == asked["request_id"]]
    assert len(found) == 1 and found[0]["summary"].startswith('asked "What is the alteplase')
    record = client.get(f"/api/audit/records/{found[0]['entry']}").json()
    candidates = record["record"]["details"]["candidates"]
    assert candidates and [r["type"] for r in record["related"]] == ["answer"]
    # why each passage was there: its document, section and words beside its hash
    passage = record["passages"][candidates[0]["chunk_id"]]
    assert passage["title"] and passage["version"] and passage["text"]
    checks = record["related"][0]["details"]["checks"]
    assert checks and all(c["support"] in ("quoted", "entailed") for c in checks)
    # the document found by words of its title, any case; pages with a total
    by_title = client.get(
        "/api/audit/records",
        params={"document": passage["title"].split()[0].upper(), "event_type": "question"},
    ).json()  # fmt: skip
    assert asked["request_id"] in {r["request_id"] for r in by_title["rows"]}
    theirs = {"user": "dr-okafor", "limit": 2}
    newest = client.get("/api/audit/records", params=theirs).json()
    assert len(newest["rows"]) == 2 and newest["total"] > 2
    entries = [r["entry"] for r in newest["rows"]]
    assert entries == sorted(entries, reverse=True)  # newest first
    older = client.get("/api/audit/records", params={**theirs, "offset": 2}).json()
    assert older["total"] == newest["total"] and older["rows"][0]["entry"] < entries[-1]
    verified = client.post("/api/audit/verify", headers=csrf(client)).json()
    assert verified["ok"] and verified["entries"] > 0
    status = client.get("/api/audit/status").json()
    assert status["last_verification"]["ok"]
    exported = client.get("/api/audit/export").text.splitlines()
    assert exported and all("proof" in json.loads(line) for line in exported)
    bad = client.get("/api/audit/records", params={"since": "yesterday"})
    assert bad.status_code == 400 and "not an ISO date" in bad.json()["detail"]


def test_feedback_is_audited_counted_and_listed_for_compliance_and_the_owner(
    client: TestClient, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    answer = ask(client, "What is the dose of glucagon for hypoglycaemia?")
    flag = {"request_id": answer["request_id"], "kind": "unsafe",
            "comment": "Does not say what to do when glucagon fails"}  # fmt: skip
    given = client.post("/api/feedback", json=flag, headers=csrf(client))
    assert given.status_code == 200, given.text
    recorded = [e for e in audit_entries(data_dir / "data", "feedback")
                if e["details"]["answer_request"] == answer["request_id"]]  # fmt: skip
    assert len(recorded) == 1 and recorded[0]["actor"]["user"] == "dr-okafor"
    assert recorded[0]["details"]["documents"] == [{
        "doc_id": "hypoglycaemia-management", "title": "Management of Hypoglycaemia in Adults",
        "version": "4", "owner": "diabetes-team",
    }]  # fmt: skip
    bad_kind = client.post("/api/feedback", json={**flag, "kind": "meh"}, headers=csrf(client))
    assert bad_kind.status_code == 400
    metrics = client.get("/metrics").text
    assert 'clinical_appliance_feedback_total{kind="unsafe"}' in metrics
    assert 'clinical_appliance_answers_total{outcome="answered",reason=""}' in metrics
    assert 'clinical_appliance_answer_step_seconds_count{step="generate"}' in metrics
    # another asker cannot flag an answer that is not theirs
    assert sign_in(client, "audit-ito") == 200
    foreign = client.post("/api/feedback", json=flag, headers=csrf(client))
    assert foreign.status_code == 400 and len(audit_entries(data_dir / "data", "feedback")) == 1
    rows = client.get("/api/audit/records", params={"event_type": "feedback"}).json()["rows"]
    assert "unsafe: Does not say what to do when glucagon fails" in rows[0]["summary"]
    assert "owner diabetes-team" in rows[0]["summary"]
    by_document = client.get(
        "/api/audit/records",
        params={"event_type": "feedback", "document": "HYPOGLYCAEMIA-management"},
    ).json()["rows"]  # fmt: skip
    assert [r["entry"] for r in by_document] == [rows[0]["entry"]]
    audit_dir = str(data_dir / "data" / "audit")
    assert audit_main(["--dir", audit_dir, "feedback", "--owner", "diabetes-team"]) == 0
    listed = capsys.readouterr()
    assert "glucagon fails" in listed.out and "1 flagged answer(s)" in listed.err
    assert audit_main(["--dir", audit_dir, "feedback", "--owner", "infection-control"]) == 0
    assert "0 flagged answer(s)" in capsys.readouterr().err


def test_a_period_report_lists_emergency_access_until_it_is_reviewed(
    client: TestClient, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    opened = client.post(
        "/api/break-glass",
        json={"reason": "unconscious in ED, allergies unknown", "patient_id": "P-10234",
              "minutes": 5},
        headers=csrf(client),
    )  # fmt: skip
    assert opened.status_code == 200, opened.text
    grant_id = opened.json()["grant_id"]
    ask(client, "What allergies does patient P-10234 have?")
    client.delete("/api/break-glass", headers=csrf(client))
    assert client.get("/api/audit/report").status_code == 404  # not the clinician's
    assert sign_in(client, "audit-ito") == 200
    report = client.get("/api/audit/report", params={"since": "2020-01-01"}).json()
    grant = next(g for g in report["emergency_access"] if g["grant_id"] == grant_id)
    assert grant["user"] == "dr-okafor" and grant["reason"].startswith("unconscious")
    assert grant["passages_shown"] >= 1 and grant["reviewed_by"] is None
    assert report["by_user"]["dr-okafor"]["questions"] >= 1 and report["by_type"]["answer"] >= 1
    assert "emergency" in report["by_department"]  # dr-okafor's department
    assert 0 <= report["refusal_rate"] <= 1
    csv_text = client.get("/api/audit/report.csv").text
    assert csv_text.startswith("section,name,measure,value") and "emergency access" in csv_text
    assert client.get("/api/audit/report", params={"until": "soon"}).status_code == 400
    review = f"/api/audit/break-glass/{grant_id}/review"
    done = client.post(review, json={"note": "reason fits the record"}, headers=csrf(client))
    assert done.status_code == 200, done.text
    again = client.post(review, json={"note": "twice"}, headers=csrf(client))
    assert again.status_code == 400 and "was reviewed by audit-ito" in again.json()["detail"]
    unknown = client.post("/api/audit/break-glass/99999/review", json={}, headers=csrf(client))
    assert unknown.status_code == 404
    report = client.get("/api/audit/report").json()
    grant = next(g for g in report["emergency_access"] if g["grant_id"] == grant_id)
    assert (grant["reviewed_by"], grant["review_note"]) == ("audit-ito", "reason fits the record")
    reviewed = audit_entries(data_dir / "data", "break_glass_reviewed")
    assert [e["details"]["grant_id"] for e in reviewed] == [grant_id]
    rows = client.get("/api/audit/records", params={"event_type": "break_glass_use"}).json()
    assert "emergency access (grant" in rows["rows"][0]["summary"]
    assert "Individual Care Plan, Patient P-10234 v1" in rows["rows"][0]["summary"]
    audit_dir = str(data_dir / "data" / "audit")
    assert audit_main(["--dir", audit_dir, "report", "--fail-on-alerts"]) == 0
    printed = capsys.readouterr().out
    assert "reviewed by audit-ito" in printed and "Alerts (0)" in printed


def test_bad_input_gets_a_clear_error(client: TestClient) -> None:
    assert sign_in(client, "dr-okafor") == 200
    malformed = client.post(
        "/api/ask",
        content=b"{not json",
        headers={**csrf(client), "content-type": "application/json"},
    )
    assert malformed.status_code == 400
    missing = client.post("/api/ask", json={"query": "wrong field"}, headers=csrf(client))
    assert missing.status_code == 400 and "question" in missing.text
    huge = client.post("/api/ask", json={"question": "x" * 20_000}, headers=csrf(client))
    assert huge.status_code == 413


def test_uploads_are_for_it_staff_limited_in_size_and_ingested_in_the_background(
    client: TestClient, data_dir: Path
) -> None:
    document = (
        b"---\ndoc_id: ward-fridge-policy\ntitle: Ward Fridge Policy\nsensitivity: internal\n"
        b"departments: [all]\n---\n# Ward Fridge Policy\n\nRecord the fridge temperature twice a day.\n"
    )
    assert sign_in(client, "dr-okafor") == 200
    files = {"data": ("fridge.md", document, "text/markdown")}
    assert client.post("/api/documents", files=files, headers=csrf(client)).status_code == 404
    assert sign_in(client, "it-santos") == 200
    too_big = {"data": ("big.md", b"x" * (80 * 1024), "text/markdown")}
    assert client.post("/api/documents", files=too_big, headers=csrf(client)).status_code == 413
    accepted = client.post("/api/documents", files=files, headers=csrf(client))
    assert accepted.status_code == 202, accepted.text
    job = finished_job(client, accepted.json()["job_id"])
    assert job["state"] == "done" and job["outcomes"][0]["status"] == "added"
    ingested = [e for e in audit_entries(data_dir / "data", "ingestion")
                if e["details"]["doc_id"] == "ward-fridge-policy"]  # fmt: skip
    assert ingested[-1]["actor"]["user"] == "it-santos"
    metrics = client.get("/metrics").text
    assert 'clinical_appliance_ingested_documents_total{outcome="added",source="upload"}' in metrics
    assert 'clinical_appliance_ingestion_last_success_timestamp_seconds{source="upload"}' in metrics


def test_the_administrator_uploads_with_details_lists_and_removes_documents(
    client: TestClient, data_dir: Path
) -> None:
    assert sign_in(client, "dr-okafor") == 200
    assert client.get("/api/admin/documents").status_code == 404
    assert sign_in(client, "it-santos") == 200
    listed = {d["doc_id"]: d for d in client.get("/api/admin/documents").json()}
    assert listed["care-plan-p10234"]["title"] == "restricted document (title withheld)"
    assert listed["hand-hygiene-policy"]["title"] == "Hand Hygiene Policy"
    assert listed["hand-hygiene-policy"]["chunks"] > 0
    body = b"# Linen Handling\n\nBag soiled linen at the bedside in a red alginate bag.\n"
    details = {"doc_id": "linen-handling", "title": "Linen Handling", "version": "2",
               "doc_type": "procedure", "effective_from": "2026-01-01",
               "departments": "Nursing, ICU", "sensitivity": "internal", "owner": "facilities"}  # fmt: skip
    bad = client.post("/api/documents", files={"data": ("linen.md", body, "text/markdown")},
                      data={**details, "effective_from": "first of May"}, headers=csrf(client))  # fmt: skip
    assert bad.status_code == 400 and "effective_from" in bad.json()["detail"]
    two = [("data", ("a.md", body, "text/markdown")), ("data", ("b.md", body, "text/markdown"))]
    assert (
        client.post("/api/documents", files=two, data=details, headers=csrf(client)).status_code
        == 400
    )
    accepted = client.post("/api/documents", files={"data": ("linen.md", body, "text/markdown")},
                           data=details, headers=csrf(client))  # fmt: skip
    assert accepted.status_code == 202, accepted.text
    job = finished_job(client, accepted.json()["job_id"])
    assert job["outcomes"][0]["status"] == "added", job
    linen = {d["doc_id"]: d for d in client.get("/api/admin/documents").json()}["linen-handling"]
    assert (linen["title"], linen["version"], linen["owner"]) == (
        "Linen Handling",
        "2",
        "facilities",
    )
    assert sorted(linen["departments"]) == ["icu", "nursing"]
    # a sidecar beside its document describes it and is not a document itself; a
    # confidential document without departments is said to be readable by few
    sidecar = b"doc_id: theatre-rota\ntitle: Theatre Rota\nsensitivity: confidential\n"
    pair = [("data", ("rota.md", b"# Theatre Rota\n\nLists start at 08:00.\n", "text/markdown")),
            ("data", ("rota.md.meta.yaml", sidecar, "application/yaml"))]  # fmt: skip
    accepted = client.post("/api/documents", files=pair, headers=csrf(client))
    assert accepted.status_code == 202 and accepted.json()["files"] == ["rota.md"]
    job = finished_job(client, accepted.json()["job_id"])
    assert job["outcomes"][0]["doc_id"] == "theatre-rota"
    assert job["outcomes"][0]["warning"].startswith("no departments")
    jobs = client.get("/api/admin/jobs").json()
    assert jobs[0]["job_id"] == accepted.json()["job_id"] and jobs[0]["user_id"] == "it-santos"
    users = {u["user"]: u for u in client.get("/api/admin/users").json()}
    assert users["it-santos"]["has_password"] and "it_admin" in users["it-santos"]["roles"]
    # users: added, changed and removed by the administrator, typos refused, all audited
    typo = client.post("/api/admin/users", json={"user": "nurse-ade", "roles": ["nruse"]},
                       headers=csrf(client))  # fmt: skip
    assert typo.status_code == 400 and "did you mean nurse" in typo.json()["detail"]
    added = client.post(
        "/api/admin/users",
        json={"user": "nurse-ade", "roles": ["nurse"], "departments": ["Cardiology"]},
        headers=csrf(client),
    )  # fmt: skip
    assert added.status_code == 200 and added.json()["departments"] == ["cardiology"]
    changed = client.patch(
        "/api/admin/users/nurse-ade",
        json={"grant": {"care_team": ["P-10234"]}, "revoke": {"departments": ["cardiology"]}},
        headers=csrf(client),
    )  # fmt: skip
    assert changed.status_code == 200, changed.text
    assert (changed.json()["departments"], changed.json()["care_team"]) == ([], ["P-10234"])
    unknown = client.patch("/api/admin/users/nobody-here", json={"grant": {"roles": ["nurse"]}},
                           headers=csrf(client))  # fmt: skip
    assert unknown.status_code == 404
    assert client.delete("/api/admin/users/it-santos", headers=csrf(client)).status_code == 400
    assert client.delete("/api/admin/users/nurse-ade", headers=csrf(client)).status_code == 200
    accounts = [e for e in audit_entries(data_dir / "data", "account_change")
                if e["details"]["user"] == "nurse-ade"]  # fmt: skip
    assert [(e["details"]["action"], e["actor"]["user"]) for e in accounts] == [
        ("added", "it-santos"), ("changed", "it-santos"), ("removed", "it-santos"),
    ]  # fmt: skip
    removed = client.delete("/api/admin/documents/linen-handling", headers=csrf(client))
    assert removed.status_code == 200 and removed.json() == {"removed": ["linen-handling"]}
    again = client.delete("/api/admin/documents/linen-handling", headers=csrf(client))
    assert again.status_code == 404
    removal = audit_entries(data_dir / "data", "removal")[-1]
    assert removal["details"]["doc_id"] == "linen-handling"
    assert removal["actor"]["user"] == "it-santos"
    client.delete("/api/admin/documents/theatre-rota", headers=csrf(client))


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    response = client.get("/login")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-request-id"]


def test_health_readiness_and_metrics(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    ready = readiness(client).json()
    assert ready["status"] == "ready" and ready["chunks"] > 0
    assert client.app.state.service.warmed.is_set()  # ready only once warmed up
    metrics = client.get("/metrics").text
    assert 'requests_total{app_name="clinical_appliance"' in metrics
    # what the appliance does, besides the requests: documents, audit, emergency access
    assert 'clinical_appliance_documents{sensitivity="internal"}' in metrics
    assert re.search(r"^clinical_appliance_audit_entries [1-9]", metrics, re.M)
    assert re.search(r"^clinical_appliance_chunks [1-9]", metrics, re.M)
    assert "clinical_appliance_audit_last_checkpoint_age_seconds" in metrics
    assert "clinical_appliance_break_glass_active_grants 0.0" in metrics
    schema = client.get("/api/schema/openapi.json").json()
    assert "/api/ask" in schema["paths"]


def test_sign_in_is_rate_limited(client: TestClient, data_dir: Path) -> None:
    app = create_app(
        make_settings(
            data_dir / "data",
            services=ServiceSettings(secure_cookies=False, login_per_minute=3),
        ),
        client.app.state.service.appliance,  # one process may hold the stores
    )
    fresh_sign_in_minute(app)
    with TestClient(app) as limited:
        limited.get("/health")
        codes = [
            limited.post(
                "/api/login", json={"user_id": "dr-okafor", "password": "wrong password!"},
                headers=csrf(limited),
            ).status_code
            for _ in range(5)
        ]  # fmt: skip
    assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]


def test_a_session_survives_a_restart_until_everyone_is_signed_out(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(data_dir / "data", services=ServiceSettings(secure_cookies=False))
    appliance = client.app.state.service.appliance  # one process may hold the stores
    with TestClient(create_app(settings, appliance)) as before:
        assert sign_in(before, "dr-okafor") == 200
        cookies = dict(before.cookies)
    with TestClient(create_app(settings, appliance), cookies=cookies) as after:  # restarted
        assert after.get("/api/me").json()["user_id"] == "dr-okafor"
        monkeypatch.setenv("APPLIANCE_DATA_DIR", str(data_dir / "data"))
        ended = CliRunner().invoke(web_cli, ["accounts", "sign-out-everyone"])
        assert ended.exit_code == 0 and "session(s)" in ended.output, ended.output
        assert after.get("/api/me").status_code == 401


def test_questions_are_limited_per_person_not_per_address(
    client: TestClient, data_dir: Path
) -> None:
    app = create_app(
        make_settings(
            data_dir / "data", services=ServiceSettings(secure_cookies=False, ask_per_minute=2)
        ),
        client.app.state.service.appliance,
    )
    question = {"question": "Which respirator do staff wear for tuberculosis?"}
    with TestClient(app) as first, TestClient(app) as second:
        assert sign_in(first, "dr-okafor") == 200
        codes = [
            first.post("/api/ask", json=question, headers=csrf(first)).status_code for _ in range(3)
        ]
        assert codes == [200, 200, 429]
        assert sign_in(second, "audit-ito") == 200  # same address, another person
        assert second.post("/api/ask", json=question, headers=csrf(second)).status_code == 200


def test_the_schema_says_what_every_endpoint_answers(client: TestClient) -> None:
    """Each operation's success response names a typed body (or an array of one), and
    its errors are listed; the fuzz test then holds every response to the schema."""
    schema = client.get("/api/schema/openapi.json").json()
    bodies = schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"401", "404", "429"} <= set(responses), (method, path)
            success = next(v for k, v in responses.items() if k.startswith("2"))
            media, content = next(iter(success["content"].items()))
            if media in ("application/x-ndjson", "text/csv"):  # files to hand on, not bodies
                continue
            typed = content["schema"].get("items", content["schema"])
            assert typed.get("$ref", "").split("/")[-1] in bodies, (method, path, typed)
