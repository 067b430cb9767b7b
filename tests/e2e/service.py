"""The web service as its own process, for end-to-end tests: a data directory with the
sample users, the service started on a free port and waited for, a client signed in."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from services.accounts import LocalAccounts
from tests.conftest import SAMPLE_SUBJECTS, free_port, wait_until_answers

BIN = Path(sys.executable).parent
OPERATOR = "it-santos"


def prepare_data(data: Path, password: str | None = None) -> None:
    """The sample users in ``data``; with ``password``, the operator's account too."""
    (data / "access").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAMPLE_SUBJECTS, data / "access" / "subjects.toml")
    if password is not None:
        LocalAccounts(data / "access" / "accounts.json").set_password(OPERATOR, password)


def environment(data: Path) -> dict[str, str]:
    """What the service and the operator's commands run with (plain HTTP on loopback),
    otherwise the product's defaults: the embedded graph server included."""
    shipped = {k: v for k, v in os.environ.items() if k != "APPLIANCE_GRAPH__ENGINE"}
    return {**shipped, "APPLIANCE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
            "APPLIANCE_SERVICES__SECURE_COOKIES": "false"}  # fmt: skip


@contextmanager
def running_service(
    data: Path, stderr: int | IO[str] = subprocess.DEVNULL
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The service process and its base URL, once it answers ``/ready``. A service the
    test left running is asked to stop (SIGTERM), and killed if it will not."""
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "appliance-web"), "serve", "--port", str(port)], env=environment(data),
        stdout=subprocess.DEVNULL, stderr=stderr, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{base}/ready")
        yield server, base
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=90)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@contextmanager
def signed_in(base: str, password: str) -> Iterator[httpx.Client]:
    """A client signed in as the operator, holding the session's CSRF cookie."""
    with httpx.Client(base_url=base, timeout=60) as client:
        client.get("/health")
        client.post(
            "/api/login", json={"user_id": OPERATOR, "password": password},
            headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
        ).raise_for_status()  # fmt: skip
        yield client


def upload(client: httpx.Client, files: list[tuple[str, bytes]]) -> str:
    """Send files as one upload; the job id the service accepted it under."""
    parts = [("data", (name, content, "application/octet-stream")) for name, content in files]
    accepted = client.post(
        "/api/documents", files=parts, headers={"x-csrftoken": client.cookies["csrftoken"]}
    )
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["job_id"])
