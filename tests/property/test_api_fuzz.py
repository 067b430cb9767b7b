"""The JSON API fuzzed from its own OpenAPI schema (schemathesis), signed in as a user who
may use every endpoint: no request may cause a server error, and every response must be
one the schema documents. Bounded: a few examples per operation in the default suite,
many in the slow mode."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from litestar import Litestar
from litestar.testing import TestClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from appliance.engines import Appliance
from appliance.settings import ServiceSettings
from services.accounts import LocalAccounts
from services.app import create_app
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, SLOW, make_settings

PASSWORD = "correct horse battery"
EVERY_ROLE = """
[users.fuzz-everything]
roles = ["clinician", "compliance_officer", "it_admin"]
departments = ["emergency"]
care_team = []
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Litestar]:
    root = tmp_path_factory.mktemp("fuzz") / "data"
    (root / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, root / "access" / "subjects.toml")
    with (root / "access" / "subjects.toml").open("a") as subjects:
        subjects.write(EVERY_ROLE)
    LocalAccounts(root / "access" / "accounts.json").set_password("fuzz-everything", PASSWORD)
    services = ServiceSettings(
        secure_cookies=False, login_per_minute=10_000, ask_per_minute=10_000,
        operations_addresses=["testclient"], max_upload_bytes=256 * 1024,
    )  # fmt: skip
    with Appliance(make_settings(root, services=services)) as appliance:
        assert not appliance.ingestor.ingest([SAMPLE_CORPUS]).failed
        yield create_app(appliance.settings, appliance)


def signed_in(app: Litestar) -> dict[str, str]:
    """The headers of a fresh signed-in session: its cookie and its CSRF token (each
    case gets its own: starting or ending break-the-glass rotates the session)."""
    client = TestClient(app)
    client.get("/health")
    response = client.post(
        "/api/login", json={"user_id": "fuzz-everything", "password": PASSWORD},
        headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
    )  # fmt: skip
    assert response.status_code == 200
    return {
        "cookie": f"session={client.cookies.get('session')}",
        "x-csrftoken": client.cookies.get("csrftoken", ""),
    }


EXAMPLES = 200 if SLOW else 8
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
"""Server errors and schema violations. Not "schema-valid data is accepted": clinical
rules the schema cannot state (a reason in words, a known patient) rightly refuse some."""


def test_no_request_causes_a_server_error_or_an_undocumented_response(app: Litestar) -> None:
    """Every operation but sign-out (which ends the session the others need), each with
    generated parameters and bodies: 0 server errors, 0 responses outside the schema."""
    schema = schemathesis.openapi.from_asgi("/api/schema/openapi.json", app)
    failures: dict[str, str] = {}
    tried = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path == "/api/logout":
            continue
        tried.append(f"{operation.method.upper()} {operation.path}")

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES, deadline=None, database=None, derandomize=not SLOW,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=signed_in(app), checks=CHECKS)

        try:
            fuzz()
        except (Exception, BaseExceptionGroup) as failure:  # every operation is tried
            failures[tried[-1]] = str(failure)[:2000]
    assert len(tried) >= 15
    assert not failures, "\n\n".join(f"{op}: {why}" for op, why in failures.items())
