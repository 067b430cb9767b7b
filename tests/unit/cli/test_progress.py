"""Progress where stderr is a log file: plain lines, one per tenth and once a minute."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.progress import Progress, TextColumn

from appliance.cli.progress import LineProgress, progress_display


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def log_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=40, force_terminal=False), out  # lines longer than that


def test_a_line_for_each_tenth_with_the_time_left() -> None:
    console, out = log_console()
    clock = FakeClock()
    with LineProgress(console, clock=clock) as progress:
        task = progress.add_task("training steps", total=None)
        for done in range(1, 201):
            clock.now += 3.0
            progress.update(task, completed=done, total=200)
    lines = out.getvalue().splitlines()
    # 600 s in all: a tenth every 60 s, so the minute rule adds nothing here
    assert len(lines) == 10
    assert lines[0] == "training steps: 20/200 (10%), 0:01:00 elapsed, about 0:09:00 left"
    assert lines[-1] == "training steps: 200/200 (100%), 0:10:00 elapsed"


def test_a_line_every_minute_when_a_tenth_takes_longer() -> None:
    console, out = log_console()
    clock = FakeClock()
    with LineProgress(console, clock=clock) as progress:
        task = progress.add_task("ingest", total=1000, chunks=0)
        for done in range(1, 51):  # 5% in 250 s: no tenth reached
            clock.now += 5.0
            progress.update(task, advance=1, chunks=3 * done)
    lines = out.getvalue().splitlines()
    assert [line.split(", ")[1] for line in lines[:4]] == [
        "0:01:00 elapsed", "0:02:00 elapsed", "0:03:00 elapsed", "0:04:00 elapsed"
    ]  # fmt: skip
    assert lines[0] == "ingest: 12/1000 (1%), 0:01:00 elapsed, about 1:22:20 left, 36 chunks"
    assert lines[-1].startswith("ingest: 50/1000 (5%), 0:04:10 elapsed")  # where it stopped


def test_nothing_more_printed_after_a_failure() -> None:
    console, out = log_console()
    clock = FakeClock()
    with pytest.raises(RuntimeError), LineProgress(console, clock=clock) as progress:
        task = progress.add_task("ingest", total=100)
        progress.update(task, advance=3)
        raise RuntimeError("disk full")
    assert out.getvalue() == ""


def test_a_terminal_gets_the_live_bar_and_a_log_the_lines() -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert isinstance(progress_display(terminal, TextColumn("x")), Progress)
    log, _ = log_console()
    assert isinstance(progress_display(log, TextColumn("x")), LineProgress)
