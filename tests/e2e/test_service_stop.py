"""SIGTERM stops the web service promptly while an upload is being ingested, and what it
wrote is whole: the audit log verifies and the stores agree with the catalog."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from appliance.engines import Appliance
from services.accounts import LocalAccounts
from tests.bombs import docx_bomb
from tests.conftest import SAMPLE_SUBJECTS, free_port, make_settings, wait_until_answers

PASSWORD = "stop test password"
BIN = Path(sys.executable).parent


def test_sigterm_during_an_upload_stops_the_service_and_leaves_everything_whole(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    (data / "access").mkdir(parents=True)
    shutil.copyfile(SAMPLE_SUBJECTS, data / "access" / "subjects.toml")
    LocalAccounts(data / "access" / "accounts.json").set_password("it-santos", PASSWORD)
    port = free_port()
    environment = {**os.environ, "APPLIANCE_DATA_DIR": str(data),
                   "APPLIANCE_SERVICES__SECURE_COOKIES": "false"}  # fmt: skip
    server = subprocess.Popen(
        [str(BIN / "appliance-web"), "serve", "--port", str(port)], env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{base}/ready")
        client = httpx.Client(base_url=base, timeout=60)
        client.get("/health")
        client.post(
            "/api/login", json={"user_id": "it-santos", "password": PASSWORD},
            headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
        ).raise_for_status()  # fmt: skip
        files = [("data", ("bomb.docx", docx_bomb(1_000_000), "application/octet-stream"))] + [
            ("data", (f"note-{n}.md", f"# Note {n}\n\nWard note number {n}.\n".encode(), "text/markdown"))
            for n in range(8)
        ]  # fmt: skip
        accepted = client.post(
            "/api/documents", files=files, headers={"x-csrftoken": client.cookies["csrftoken"]}
        )
        assert accepted.status_code == 202, accepted.text
        time.sleep(0.5)  # the job has started
        asked_to_stop = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=90)
        stopped_after = time.monotonic() - asked_to_stop
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    log = server.stderr.read() if server.stderr else ""
    # uvicorn shuts down cleanly, then re-raises the signal so the exit status tells it.
    assert server.returncode in (0, -signal.SIGTERM), log
    assert "Application shutdown complete" in log
    assert stopped_after < 60, stopped_after
    verified = subprocess.run(
        [str(BIN / "audit"), "--dir", str(data / "audit"), "verify"], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout
    with Appliance(make_settings(data)) as appliance:
        assert appliance.catalog.pending() == []
        indexed = sum(r.chunk_count for r in appliance.catalog.documents())
        assert appliance.lexical.count() == appliance.vectors.count() == indexed
