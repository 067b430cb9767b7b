"""The reviewed ward language (``policies/ward-language.toml``): shorthand and what it
means, and the word endings of drug names that spelling correction must never touch."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class WardLanguage:
    shorthand: dict[str, str]
    """Key as written in the file to its expansion (see the file for the case rule)."""
    protected_stems: tuple[str, ...]

    @classmethod
    def load(cls, path: Path) -> WardLanguage:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ValueError(f"ward language file {path} cannot be read: {error}") from error
        shorthand = data.get("shorthand", {})
        stems = data.get("protected", {}).get("stems", [])
        bad = [k for k, v in shorthand.items() if not isinstance(v, str) or not v.strip()]
        if bad or not all(isinstance(s, str) and s for s in stems):
            raise ValueError(
                f"{path}: every [shorthand] entry needs a non-empty text expansion "
                f"(check {bad[:3]}), and [protected] stems must be non-empty strings"
            )
        return cls(dict(shorthand), tuple(s.lower() for s in stems))

    def shorthand_pattern(self) -> re.Pattern[str]:
        """One pattern for every key, longest first; lower-case keys match any case."""
        parts = []
        for key in sorted(self.shorthand, key=len, reverse=True):
            escaped = re.escape(key)
            parts.append(f"(?i:{escaped})" if key == key.lower() else escaped)
        return re.compile(r"(?<![\w&#-])(?:" + "|".join(parts) + r")(?![\w&-])")

    def expansion(self, written: str) -> str | None:
        """What a matched piece of text means (exact key first, then any-case key)."""
        if written in self.shorthand:
            return self.shorthand[written]
        lower = written.lower()
        return self.shorthand.get(lower) if lower in self.shorthand else None

    def is_drug_like(self, word: str) -> bool:
        lower = word.lower()
        return any(stem in lower for stem in self.protected_stems)
