"""Writes docs/settings.md: every setting, its environment variable, type, default and
description, generated from the settings model so that the page cannot drift from it.

    .venv/bin/python scripts/settings_table.py        # rewrite docs/settings.md
    .venv/bin/python scripts/settings_table.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from appliance.settings import PROJECT_ROOT, Settings

PAGE = PROJECT_ROOT / "docs" / "settings.md"
HEADER = """# Settings

Every setting, generated from `appliance/settings.py` by `scripts/settings_table.py`
(a test fails when this page is stale). Set them as environment variables, or in a TOML
file named by `APPLIANCE_CONFIG` (the section is the group: `[retrieval]` then
`rrf_k = 30`). Environment variables win over the file. A name the appliance does not
know is an error, never ignored.
"""


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in arguments)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in arguments).replace("NoneType", "none")
    if origin is list:
        return f"list of {_type_name(arguments[0])}"
    return str(annotation)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return "(computed)"
    if field.default is PydanticUndefined:
        return "(required)"
    value = field.default
    if isinstance(value, Path) and value.is_relative_to(PROJECT_ROOT):
        value = f"<project>/{value.relative_to(PROJECT_ROOT)}"
    return f"`{value}`" if value not in (None, []) else "none" if value is None else "`[]`"


def _rows(model: type[BaseModel], prefix: str, group: str) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            continue
        description = " ".join((field.description or "").split()).replace("|", "\\|")
        rows.append(
            f"| `{prefix}{name.upper()}` | {group}`{name}` | {_type_name(annotation)} "
            f"| {_default(field)} | {description} |"
        )
    return rows


def _groups(model: type[BaseModel], prefix: str, section: str) -> list[str]:
    """Each group's heading row and its settings, then its own groups ([a.b])."""
    lines = []
    for name, field in model.model_fields.items():
        group = field.annotation
        if isinstance(group, type) and issubclass(group, BaseModel):
            title = f"{section}{name}"
            about = " ".join((group.__doc__ or "").split()).replace("|", "\\|")
            lines.append(f"| **{title}** | `[{title}]` | | | {about} |")
            lines += _rows(group, f"{prefix}{name.upper()}__", "")
            lines += _groups(group, f"{prefix}{name.upper()}__", f"{title}.")
    return lines


def table() -> str:
    lines = [HEADER, "| environment variable | TOML | type | default | what it does |"]
    lines.append("|---|---|---|---|---|")
    lines += _rows(Settings, "APPLIANCE_", "")
    lines += _groups(Settings, "APPLIANCE_", "")
    return "\n".join(lines) + "\n"


def main() -> None:
    text = table()
    if "--check" in sys.argv[1:]:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            sys.exit(f"{PAGE} is stale: run .venv/bin/python scripts/settings_table.py")
        return
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
