"""Progress of long commands (ingestion, training, benchmarks), on a terminal or in a log.

rich's bar redraws one line in place, so where stderr is not a terminal (a job run by
Ansible, nohup or systemd) it shows nothing for the whole run. There the same calls print
a plain line for each tenth of the work, and at least once a minute, with the time left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID


@dataclass(slots=True)
class _LineTask:
    description: str
    total: float | None
    started: float
    completed: float = 0.0
    printed_at: float = 0.0
    printed_tenth: int = 0
    printed_completed: float | None = None
    fields: dict[str, object] = field(default_factory=dict)


class LineProgress:
    """The part of rich's ``Progress`` the commands use, written as log lines."""

    def __init__(
        self,
        console: Console,
        every_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self._every_s = every_s
        self._clock = clock
        self._tasks: list[_LineTask] = []

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, failure: type[BaseException] | None, *_: object) -> None:
        if failure is not None:  # the command's error says what happened
            return
        for task in self._tasks:  # where each task ended, unless already printed
            if task.completed != task.printed_completed:
                self._print(task)

    def add_task(self, description: str, total: float | None = None, **fields: object) -> TaskID:
        now = self._clock()
        self._tasks.append(_LineTask(description, total, now, printed_at=now, fields=fields))
        return TaskID(len(self._tasks) - 1)

    def update(
        self,
        task_id: TaskID,
        *,
        completed: float | None = None,
        total: float | None = None,
        advance: float | None = None,
        **fields: object,
    ) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if advance is not None:
            task.completed += advance
        task.fields.update(fields)
        tenth = int(10 * task.completed / task.total) if task.total else 0
        if tenth > task.printed_tenth or self._clock() - task.printed_at >= self._every_s:
            task.printed_tenth = max(task.printed_tenth, tenth)
            self._print(task)

    def _print(self, task: _LineTask) -> None:
        now = self._clock()
        task.printed_at, task.printed_completed = now, task.completed
        elapsed = now - task.started
        parts = [f"{task.description}: {task.completed:.0f}"]
        if task.total:
            share = task.completed / task.total
            parts[0] += f"/{task.total:.0f} ({100 * share:.0f}%)"
            parts.append(f"{_clock_time(elapsed)} elapsed")
            if 0 < share < 1:
                parts.append(f"about {_clock_time(elapsed * (1 - share) / share)} left")
        else:
            parts.append(f"{_clock_time(elapsed)} elapsed")
        parts += [f"{value} {name}" for name, value in task.fields.items()]
        self.console.print(", ".join(parts), highlight=False, markup=False, soft_wrap=True)


def progress_display(console: Console, *columns: ProgressColumn) -> Progress | LineProgress:
    """rich's live bar on a terminal; log lines anywhere else."""
    if console.is_terminal:
        return Progress(*columns, console=console)
    return LineProgress(console)


def _clock_time(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"
