"""The engine lock is granted in turn: a holder that asks again queues behind waiters."""

from __future__ import annotations

import threading
import time

import pytest

from services.fair_lock import FairLock


def _wait_for(condition, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.001)


def test_a_holder_that_asks_again_goes_behind_the_thread_already_waiting() -> None:
    lock = FairLock()
    order: list[str] = []
    lock.acquire()

    def waiter() -> None:
        with lock:
            order.append("waiter")

    thread = threading.Thread(target=waiter)
    thread.start()
    _wait_for(lambda: lock.waiting == 1)

    def holder_again() -> None:
        with lock:
            order.append("holder again")

    again = threading.Thread(target=holder_again)
    again.start()
    _wait_for(lambda: lock.waiting == 2)
    lock.release()
    thread.join(10)
    again.join(10)
    assert order == ["waiter", "holder again"]


def test_many_threads_each_hold_it_alone() -> None:
    lock = FairLock()
    inside = 0
    most = 0

    def work() -> None:
        nonlocal inside, most
        for _ in range(200):
            with lock:
                inside += 1
                most = max(most, inside)
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most == 1 and lock.waiting == 0


def test_releasing_a_lock_nobody_holds_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not held"):
        FairLock().release()
