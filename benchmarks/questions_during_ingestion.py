"""How long a clinician's question waits while a long upload is ingested, on the
embedded stores, side by side in one run:

- **idle**: no ingestion (the reference);
- **read holding the engines**: each document read and written with the engine lock
  held, as the service did before the document reader (a question waits for a
  whole document);
- **read in the document reader**: the document read in the child process and
  only its writes made holding the lock (the service today).

The service's own parts, in one process: its fair engine lock, the answer pipeline
(extractive generator, the CPU default), the ingestor and the document reader. One
clinician asks the sample golden set's questions one after another for as long as the
upload runs (the idle row: for as long as the first upload took). The preparation
process is started and warmed before the clock starts: its first document would also
wait for its models.

    .venv/bin/python benchmarks/questions_during_ingestion.py [--manuals 3] [--paragraphs 1200]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from appliance.document_reader import PreparationProcess
from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from appliance.settings import PROJECT_ROOT, Settings
from services.fair_lock import FairLock

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "questions_during_ingestion.json"
ASKER = "dr-okafor"
console = Console()


def write_manuals(folder: Path, tag: str, count: int, paragraphs: int) -> list[Path]:
    """Long ward manuals, new to the stores (their own doc ids per mode)."""
    folder.mkdir(parents=True)
    paths = []
    for n in range(count):
        body = "".join(
            f"Step {p}: on ward {n}, the {('resuscitation', 'dressing', 'drug')[p % 3]} trolley "
            f"is checked at {p % 24}:00 and signed by the nurse in charge.\n\n"
            for p in range(paragraphs)
        )
        path = folder / f"{tag}-manual-{n}.md"
        path.write_text(f"---\ndoc_id: {tag}-manual-{n}\n---\n# Ward {n} Manual\n\n{body}")
        paths.append(path)
    return paths


def ask_while(
    running: Callable[[], bool], appliance: Appliance, lock: FairLock, questions: list[str]
) -> list[float]:
    """Milliseconds per answer, asked one after another while ``running()``."""
    subject = appliance.subjects.get(ASKER)
    today = dt.date.today()
    latencies: list[float] = []
    while running():
        question = questions[len(latencies) % len(questions)]
        started = time.perf_counter()
        with lock:
            appliance.answers.ask(question, subject, ActiveOn(today), in_force_on=today)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def measure(
    appliance: Appliance,
    questions: list[str],
    upload: Callable[[FairLock], None] | None,
    idle_s: float = 0.0,
) -> dict[str, object]:
    """Questions asked while ``upload`` runs in a thread (or for ``idle_s`` without one)."""
    lock = FairLock()
    done = threading.Event()
    took: list[float] = []

    def run_upload(upload: Callable[[FairLock], None]) -> None:
        started = time.perf_counter()
        try:
            upload(lock)
        finally:
            took.append(time.perf_counter() - started)
            done.set()

    if upload is None:
        deadline = time.monotonic() + idle_s
        latencies = ask_while(lambda: time.monotonic() < deadline, appliance, lock, questions)
    else:
        thread = threading.Thread(target=run_upload, args=(upload,))
        thread.start()
        latencies = ask_while(lambda: not done.is_set(), appliance, lock, questions)
        thread.join()
    latencies.sort()
    return {
        "ingestion_s": round(took[0], 1) if took else None,
        "questions": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
        "max_ms": round(latencies[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manuals", type=int, default=3)
    parser.add_argument("--paragraphs", type=int, default=1200)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in (SAMPLE / "golden.jsonl").open()]
    with tempfile.TemporaryDirectory(prefix="appliance-during-") as work:
        data = Path(work) / "data"
        (data / "access").mkdir(parents=True)
        shutil.copyfile(SAMPLE / "subjects.toml", data / "access" / "subjects.toml")
        settings = Settings(data_dir=data)
        preparation = PreparationProcess(settings)
        with Appliance(settings) as appliance:
            appliance.ingestor.ingest([SAMPLE / "documents"])
            warm = iter([True, True, True, False])
            ask_while(lambda: next(warm), appliance, FairLock(), questions)  # models load
            warm_up = write_manuals(Path(work) / "warm", "warm", 1, 5)
            preparation.prepare(warm_up, {})  # the child's models load here, off the clock
            holding = write_manuals(
                Path(work) / "holding", "holding", args.manuals, args.paragraphs
            )
            apart = write_manuals(Path(work) / "apart", "apart", args.manuals, args.paragraphs)

            def read_holding(lock: FairLock) -> None:
                for path in holding:
                    with lock:
                        appliance.ingestor.ingest([path])

            def read_apart(lock: FairLock) -> None:
                for path in apart:
                    prepared = preparation.prepare([path], {})
                    with lock:
                        appliance.ingestor.write(prepared)

            try:
                holding_row = measure(appliance, questions, read_holding)
                apart_row = measure(appliance, questions, read_apart)
                idle_s = float(holding_row["ingestion_s"])  # type: ignore[arg-type]
                rows = {
                    "idle": measure(appliance, questions, None, idle_s),
                    "read holding the engines": holding_row,
                    "read in the document reader": apart_row,
                }
                chunks = appliance.catalog.chunk_count()
            finally:
                preparation.close()
    table = Table(title=f"{args.manuals} manuals of {args.paragraphs} paragraphs; one asker")
    for column in ("", "ingestion s", "questions", "p50 ms", "p95 ms", "max ms"):
        table.add_column(column, justify="right" if column else "left")
    for name, row in rows.items():
        table.add_row(
            name, *(str(row[k]) for k in ("ingestion_s", "questions", "p50_ms", "p95_ms", "max_ms"))
        )
    console.print(table)
    report = {
        "manuals": args.manuals,
        "paragraphs": args.paragraphs,
        "chunks_in_stores": chunks,
        "rows": rows,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
