"""A process that appends to an audit log, for the crash and concurrency tests.

    python -m tests.integration.audit_writer DIR LABEL COUNT THREADS

Appends COUNT entries per thread, each naming LABEL and its own number, and prints
"LABEL NUMBER POSITION" once each append has returned (that is, is on disk).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from audit.log import AuditLog


def main() -> None:
    directory, label, count, threads = (
        Path(sys.argv[1]),
        sys.argv[2],
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    log = AuditLog(directory, checkpoint_every=50, checkpoint_seconds=0.2)
    printing = threading.Lock()

    def work(thread: int) -> None:
        for n in range(count):
            number = f"{thread}-{n}"
            receipt = log.append(
                "ingestion", f"writer-{label}", ["it_admin"],
                {"doc_id": f"{label}-{number}", "version": "1", "chunk_ids": []},
            )  # fmt: skip
            with printing:
                sys.stdout.write(f"{label} {number} {receipt.position}\n")
                sys.stdout.flush()

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    log.close()


if __name__ == "__main__":
    main()
