"""The reviewed Cypher templates of the graph retriever, kept as files beside this one.

Free-form Cypher is never run. A template's text is fixed at review; the only thing
put into it at run time is the asker's access filter, compiled from our own filter
language at each ``{access}`` (or ``{access:node}``) mark. Every other value is a
parameter, checked against the kind its header declares before the query is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from appliance.index.cypher_filter import compile_filter
from appliance.index.filters import SearchFilter, without_dates

TEMPLATE_DIR = Path(__file__).with_name("cypher")
ParameterKind = Literal["names", "ids", "count"]
_PARAMETERS = re.compile(r"^// parameters: (.+)$", re.MULTILINE)
_DECLARED = re.compile(r"^(\w+) \((names|ids|count)\)$")
_ACCESS = re.compile(r"\{(access|readable)(?::(\w+))?\}")
MAX_LIST = 64
MAX_NAME_CHARS = 200
MAX_COUNT = 500


class TemplateError(ValueError):
    """A template was asked for that does not exist, or with parameters it does not take."""


@dataclass(frozen=True, slots=True)
class CypherTemplate:
    name: str
    text: str
    parameters: Mapping[str, ParameterKind]

    def query(
        self, values: Mapping[str, object], search_filter: SearchFilter | None
    ) -> tuple[str, dict[str, object]]:
        """The Cypher text with the access filter in place, and every parameter checked."""
        missing = set(self.parameters) - set(values)
        unknown = set(values) - set(self.parameters)
        if missing or unknown:
            raise TemplateError(
                f"template {self.name!r} takes {sorted(self.parameters)}; "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}"
            )
        bound = {name: _checked(name, kind, values[name]) for name, kind in self.parameters.items()}

        def access(match: re.Match[str]) -> str:
            mark, node = match.group(1), match.group(2) or "c"
            applied = search_filter if mark == "access" else without_dates(search_filter)
            compiled = compile_filter(applied, node, prefix=f"{mark}_{node}")
            bound.update(compiled.parameters)
            return compiled.expression

        return _ACCESS.sub(access, self.text), bound


def _checked(name: str, kind: ParameterKind, value: object) -> object:
    if kind == "count":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_COUNT:
            raise TemplateError(f"{name} must be a whole number from 1 to {MAX_COUNT}")
        return value
    if not isinstance(value, list | tuple) or not 0 < len(value) <= MAX_LIST:
        raise TemplateError(f"{name} must be a list of 1 to {MAX_LIST} strings")
    for item in value:
        if not isinstance(item, str) or not 0 < len(item) <= MAX_NAME_CHARS:
            raise TemplateError(f"{name} holds {item!r}: not a string of 1 to {MAX_NAME_CHARS}")
    return list(value)


def load_template(path: Path) -> CypherTemplate:
    text = path.read_text(encoding="utf-8")
    header = _PARAMETERS.search(text)
    if header is None:
        raise TemplateError(f"{path.name} declares no parameters")
    parameters: dict[str, ParameterKind] = {}
    for declared in header.group(1).split(","):
        match = _DECLARED.match(declared.strip())
        if match is None:
            raise TemplateError(f"{path.name}: cannot read the parameter {declared.strip()!r}")
        parameters[match.group(1)] = match.group(2)  # type: ignore[assignment]
    return CypherTemplate(path.stem, text, parameters)


def load_templates(directory: Path = TEMPLATE_DIR) -> dict[str, CypherTemplate]:
    """Every reviewed template, by name."""
    return {p.stem: load_template(p) for p in sorted(directory.glob("*.cypher"))}
