"""Where a document's metadata comes from: defaults, then front matter, then a sidecar."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from appliance.ingest.errors import IngestError
from appliance.ingest.metadata import build_metadata, default_doc_id, read_sidecar
from appliance.records import ParsedDocument


def _parsed(title: str | None = "Sepsis Bundle", **front_matter: object) -> ParsedDocument:
    return ParsedDocument(text="x", blocks=(), title=title, front_matter=front_matter)


def test_a_sidecar_outranks_front_matter_which_outranks_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "sepsis.md"
    defaults = {"sensitivity": "public", "departments": ["ED"], "version": "1"}
    parsed = _parsed(version="3", owner="dr-a")
    metadata = build_metadata(path, parsed, {"version": "4"}, defaults)
    assert metadata.version == "4"  # sidecar
    assert metadata.owner == "dr-a"  # front matter
    assert metadata.sensitivity == "public" and metadata.departments == ("ed",)  # defaults


def test_without_labels_a_document_is_restricted_and_named_after_its_file(tmp_path: Path) -> None:
    metadata = build_metadata(tmp_path / "ward manual (v2).md", _parsed(title=None), {}, {})
    assert metadata.sensitivity == "restricted"
    assert metadata.doc_id == "ward-manual-v2" and metadata.title == "ward manual (v2)"
    assert metadata.effective_from == dt.date(1970, 1, 1) and metadata.effective_to is None


def test_file_names_become_safe_ids() -> None:
    assert default_doc_id(Path("Köln notes.final.pdf")) == "K-ln-notes"
    assert default_doc_id(Path("!!!.md")) == "document"


def test_invalid_metadata_names_each_field_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    sidecar = {
        "sensitivity": "secret",
        "effective_from": "2026-05-01",
        "effective_to": "2026-01-01",
    }
    with pytest.raises(IngestError) as raised:
        build_metadata(path, _parsed(), sidecar, {})
    message = str(raised.value)
    assert "sensitivity" in message and "bad.md.meta.yaml" in message


def test_a_sidecar_that_is_not_a_mapping_or_not_yaml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.pdf"
    assert read_sidecar(path) == ({}, b"")
    (tmp_path / "policy.pdf.meta.yaml").write_text("- just\n- a list\n")
    with pytest.raises(IngestError, match="must be a mapping"):
        read_sidecar(path)
    (tmp_path / "policy.pdf.meta.yaml").write_bytes(b"title: [unclosed\n")
    with pytest.raises(IngestError, match="not valid UTF-8 YAML"):
        read_sidecar(path)
    (tmp_path / "policy.pdf.meta.yaml").write_text("title: Blood Policy\nversion: 2\n")
    fields, raw = read_sidecar(path)
    assert fields == {"title": "Blood Policy", "version": 2} and raw.startswith(b"title:")
