"""SIGTERM stops the web service promptly while an upload is being ingested, and what it
wrote is whole: the audit log verifies and the stores agree with the catalog."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from appliance.engines import Appliance
from tests.bombs import docx_bomb
from tests.conftest import make_settings
from tests.e2e.service import BIN, prepare_data, running_service, signed_in, upload

PASSWORD = "stop test password"


def test_sigterm_during_an_upload_stops_the_service_and_leaves_everything_whole(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    prepare_data(data, PASSWORD)
    with (
        running_service(data, stderr=subprocess.PIPE) as (server, base),
        signed_in(base, PASSWORD) as client,
    ):
        notes = [(f"note-{n}.md", f"# Note {n}\n\nWard note number {n}.\n".encode())
                 for n in range(8)]  # fmt: skip
        upload(client, [("bomb.docx", docx_bomb(1_000_000)), *notes])
        time.sleep(0.5)  # the job has started
        asked_to_stop = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=90)
        stopped_after = time.monotonic() - asked_to_stop
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
