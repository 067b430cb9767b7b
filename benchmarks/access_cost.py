"""What access control costs per query: compiling the subject's filter, then checking
100 fused candidates with the Casbin enforcer, side by side with the naive way
(one enforcer call per candidate, no sharing of decisions between equal labels).

Two candidate sets: 100 real chunks of the sample corpus (labels repeat, as they do in
a hospital's documents), and a worst case of 100 candidates with 100 distinct label sets.

    .venv/bin/python benchmarks/access_cost.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from appliance.access.guard import AccessScope
from appliance.access.rules import Resource, Subject
from appliance.access.subjects import SubjectDirectory
from appliance.engines import Appliance
from appliance.settings import PROJECT_ROOT, Settings

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "access_cost.json"
console = Console()


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _timed(work: Callable[[], object], rounds: int) -> list[float]:
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="queries per subject and method")
    args = parser.parse_args()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder), rerank={"cage": False})  # type: ignore[arg-type]
        with Appliance(settings) as appliance:
            console.print("ingesting the sample corpus ...")
            appliance.ingestor.ingest([SAMPLE / "documents"])
            chunk_ids = [
                i
                for record in appliance.catalog.documents()
                for i in appliance.catalog.chunk_ids_of(record.doc_id)
            ]
            real = [
                Resource.of(chunk)
                for chunk in appliance.catalog.chunks(rng.sample(chunk_ids, 100)).values()
            ]
            distinct = [
                Resource(f"doc-{n}", (rng.choice(("cardiology", "icu", "all")),),
                         rng.choice(("public", "internal", "confidential", "restricted")),
                         f"team-{n}", rng.choice(("", "P-10234")))
                for n in range(100)
            ]  # fmt: skip
            subjects = list(SubjectDirectory(SAMPLE / "subjects.toml").subjects().values())
            guard = appliance.guard
            enforcer = appliance.policy.current().enforcer

            def ours(candidates: list[Resource], subject: Subject) -> Callable[[], object]:
                def query() -> object:
                    scope: AccessScope = guard.scope(subject)
                    return [scope.allows(r) for r in candidates]

                return query

            def naive(candidates: list[Resource], subject: Subject) -> Callable[[], object]:
                def query() -> object:
                    scope = guard.scope(subject)
                    return [enforcer.enforce(scope.subject, r, "read") for r in candidates]

                return query

            def compile_only(subject: Subject) -> Callable[[], object]:
                return lambda: guard.scope(subject)

            rows: dict[str, dict[str, float]] = {}
            for label, factory in (
                ("filter compile only", compile_only),
                ("compile + 100 checks, naive (sample chunks)", lambda s: naive(real, s)),
                ("compile + 100 checks, ours (sample chunks)", lambda s: ours(real, s)),
                ("compile + 100 checks, naive (100 distinct labels)", lambda s: naive(distinct, s)),
                ("compile + 100 checks, ours (100 distinct labels)", lambda s: ours(distinct, s)),
            ):  # fmt: skip
                samples: list[float] = []
                for subject in subjects:
                    work = factory(subject)
                    work()  # warm-up
                    samples += _timed(work, args.rounds)
                p50, p95 = _percentiles(samples)
                rows[label] = {"p50_ms": round(p50, 3), "p95_ms": round(p95, 3)}
    table = Table(title=f"access control cost per query ({len(subjects)} subjects x {args.rounds})")
    for column in ("method", "p50 ms", "p95 ms"):
        table.add_column(column)
    for label, figures in rows.items():
        table.add_row(label, f"{figures['p50_ms']:.2f}", f"{figures['p95_ms']:.2f}")
    console.print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {"command": "benchmarks/access_cost.py", "rounds": args.rounds, "rows": rows}, indent=2
        )
        + "\n"
    )
    console.print(f"written to {RESULTS.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
