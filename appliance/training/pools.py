"""Multi-hop candidate pools (the schema of ../shared/data/multihop and rerank_train)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Passage:
    pid: str
    title: str
    text: str
    is_supporting: bool

    @property
    def full_text(self) -> str:
        return f"{self.title}. {self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class PoolQuestion:
    qid: str
    question: str
    kind: str
    passages: tuple[Passage, ...]

    @property
    def gold(self) -> set[int]:
        return {i for i, p in enumerate(self.passages) if p.is_supporting}


def read_pools(path: Path, limit: int | None = None) -> list[PoolQuestion]:
    questions: list[PoolQuestion] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if limit is not None and len(questions) >= limit:
                break
            try:
                record = json.loads(line)
                passages = tuple(
                    Passage(p["pid"], p.get("title") or "", p["text"], bool(p["is_supporting"]))
                    for p in record["passages"]
                )
                questions.append(
                    PoolQuestion(
                        record["id"], record["question"], str(record.get("type", "")), passages
                    )
                )
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not a pool question ({error})") from error
    return questions
