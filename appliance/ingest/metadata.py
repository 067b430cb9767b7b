"""Where a document's metadata comes from, in increasing precedence:

1. ingestion defaults (``appliance ingest --default-sensitivity ...``);
2. YAML front matter at the top of a Markdown or text file;
3. a sidecar file next to the document, ``<file name>.meta.yaml`` (for any format,
   and the only way for PDF, HTML and DOCX).

Keys: ``doc_id``, ``title``, ``version``, ``doc_type``, ``effective_from``,
``effective_to``, ``superseded_by``, ``departments``, ``sensitivity``, ``owner``,
``patient_id``, ``authority``. ``doc_id`` defaults to the file name without extension and
``title`` to the document's first heading. Without a ``sensitivity`` a document is
``restricted``: access is closed unless someone opens it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import ValidationError

from appliance.ingest.errors import IngestError
from appliance.records import DocumentMetadata, ParsedDocument

SIDECAR_SUFFIX = ".meta.yaml"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def read_sidecar(path: Path) -> tuple[dict[str, object], bytes]:
    """The sidecar's fields and raw bytes (empty when there is none)."""
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return {}, b""
    raw = sidecar.read_bytes()
    try:
        fields = yaml.safe_load(raw.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise IngestError(
            path, f"its sidecar {sidecar.name} is not valid UTF-8 YAML ({error})"
        ) from error
    if not isinstance(fields, dict):
        raise IngestError(path, f"its sidecar {sidecar.name} must be a mapping of metadata keys")
    return fields, raw


def default_doc_id(path: Path) -> str:
    stem = path.name.split(".")[0]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.") or "document"


def build_metadata(
    path: Path,
    parsed: ParsedDocument,
    sidecar: Mapping[str, object],
    defaults: Mapping[str, object],
) -> DocumentMetadata:
    fields: dict[str, object] = {
        "doc_id": default_doc_id(path),
        "title": parsed.title or path.stem,
    }
    fields.update(defaults)
    fields.update(parsed.front_matter)
    fields.update(sidecar)
    fields.pop("ocr_confidence", None)  # what the recogniser said, not the document
    if parsed.ocr_confidence:
        fields["ocr_confidence"] = dict(parsed.ocr_confidence)
    try:
        return DocumentMetadata.model_validate(fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'metadata'}: {e['msg']}"
            for e in error.errors()
        )
        raise IngestError(
            path,
            f"its metadata is not valid ({problems})",
            f"Fix the front matter or {path.name}{SIDECAR_SUFFIX}.",
        ) from error


def readers_warning(metadata: DocumentMetadata) -> str | None:
    """A document above internal with no departments is readable only by a role the
    policy grants every department: said at ingestion, never left silently invisible."""
    if metadata.departments or metadata.sensitivity in ("public", "internal"):
        return None
    return (
        f"no departments: this {metadata.sensitivity} document is readable only by roles "
        "granted every department; give it departments and ingest it again"
    )
