"""The one error type of ingestion: what went wrong with which file, and what to do."""

from __future__ import annotations

from pathlib import Path


class IngestError(Exception):
    """A file could not be ingested. Nothing of it is written to any store."""

    def __init__(self, path: Path, reason: str, remedy: str = "") -> None:
        self.path = path
        self.reason = reason
        self.remedy = remedy
        message = f"{path}: {reason}"
        super().__init__(f"{message}. {remedy}" if remedy else message)
