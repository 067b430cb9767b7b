"""A lock granted in the order it was asked for.

``threading.Lock`` is not fair: a thread that releases it and asks again at once (an
upload job going from one document to the next) usually wins it back, so a clinician's
question could wait for a whole upload. Here a releasing holder hands the lock to the
longest waiter, and a newcomer queues behind everyone already waiting.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class FairLock:
    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._waiting: deque[threading.Event] = deque()
        self._held = False

    def acquire(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn = threading.Event()
            self._waiting.append(turn)
        turn.wait()  # the releasing holder hands the lock over: it stays held

    def release(self) -> None:
        with self._mutex:
            if not self._held:
                raise RuntimeError("release of a FairLock that is not held")
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._held = False

    @property
    def waiting(self) -> int:
        """How many threads wait for the lock now."""
        with self._mutex:
            return len(self._waiting)

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
