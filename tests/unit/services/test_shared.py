"""The state worker processes share through one SQLite file: a session opened by one
worker holds in another, failed sign-ins count across them, rate windows and jobs are
seen by all. Each worker is its own SharedDatabase (its own connections) on the same
file, as separate processes are; one test uses a real second process."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import anyio

from services.sessions import SessionStore, SignInThrottle
from services.shared import SharedDatabase, SharedStore, load_job, save_job


def worker(path: Path) -> SharedDatabase:
    return SharedDatabase(path)


def test_a_session_opened_by_one_worker_holds_in_another(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    first, second = SessionStore(worker(path), 3600), SessionStore(worker(path), 3600)
    session = first.start("dr-okafor", "stamp-1")
    seen = second.get(session.session_id, lambda user: "stamp-1")
    assert seen is not None and seen.csrf_token == session.csrf_token
    rotated = second.rotate(seen)
    assert first.get(session.session_id, lambda user: "stamp-1") is None
    assert first.get(rotated.session_id, lambda user: "stamp-1") is not None
    second.end(rotated.session_id)
    assert first.get(rotated.session_id, lambda user: "stamp-1") is None


def test_the_file_never_holds_a_session_id(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    session = SessionStore(worker(path), 3600).start("dr-okafor", "stamp-1")
    assert session.session_id.encode() not in path.read_bytes() + _wal(path)


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_a_changed_credential_or_an_expired_session_ends_it_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    now = [1000.0]
    first = SessionStore(worker(path), 60, clock=lambda: now[0])
    second = SessionStore(worker(path), 60, clock=lambda: now[0])
    changed = first.start("dr-okafor", "stamp-1")
    assert second.get(changed.session_id, lambda user: "stamp-2") is None
    assert first.get(changed.session_id, lambda user: "stamp-1") is None  # gone for good
    expiring = first.start("dr-okafor", "stamp-1")
    now[0] += 61
    assert second.get(expiring.session_id, lambda user: "stamp-1") is None
    assert len(first) == 0


def test_signing_out_a_user_ends_their_sessions_in_every_worker(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    first, second = SessionStore(worker(path), 3600), SessionStore(worker(path), 3600)
    kept = first.start("audit-ito", "a")
    ended = [first.start("dr-okafor", "s"), second.start("dr-okafor", "s")]
    assert second.end_user("dr-okafor") == 2
    assert all(first.get(s.session_id, lambda user: "s") is None for s in ended)
    assert first.get(kept.session_id, lambda user: "a") is not None
    second.clear()
    assert first.get(kept.session_id, lambda user: "a") is None


def _fail_sign_ins(path: Path, user: str, count: int) -> None:
    throttle = SignInThrottle(SharedDatabase(path), per_minute=5)
    for _ in range(count):
        throttle.failed(user)


def test_failed_sign_ins_count_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    here = SignInThrottle(worker(path), per_minute=5)
    here.failed("dr-okafor")
    other = multiprocessing.get_context("spawn").Process(
        target=_fail_sign_ins, args=(path, "dr-okafor", 4)
    )
    other.start()
    other.join(60)
    assert other.exitcode == 0
    assert here.blocked("dr-okafor")
    assert not here.blocked("audit-ito")


def test_rate_windows_and_jobs_are_seen_by_every_worker(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    first, second = worker(path), worker(path)

    async def windows() -> None:
        await SharedStore(first, "ask-rate").set("user:dr-okafor", b"3", expires_in=60)
        other = SharedStore(second, "ask-rate")
        assert await other.get("user:dr-okafor") == b"3"
        assert 0 < (await other.expires_in("user:dr-okafor") or 0) <= 60
        assert await SharedStore(second, "login-rate").get("user:dr-okafor") is None
        await other.set("gone", b"1", expires_in=-1)
        assert not await other.exists("gone")
        await other.delete_all()
        assert await SharedStore(first, "ask-rate").get("user:dr-okafor") is None

    anyio.run(windows)
    save_job(first, "job-1", {"state": "running", "done": 1})
    assert load_job(second, "job-1") == {"state": "running", "done": 1}
    assert load_job(second, "job-2") is None
