"""The ``appliance`` command as an operator runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from appliance.cli import app

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_ingest_search_list_and_remove(corpus_copy: Path, data_dir: Path) -> None:
    (corpus_copy / "notes.xlsx").write_bytes(b"not supported")
    result = runner.invoke(app, ["ingest", str(corpus_copy), str(corpus_copy / "notes.xlsx")])
    assert result.exit_code == 1, result.output
    assert "5 added, 0 updated, 0 unchanged, 1 failed" in result.output

    result = runner.invoke(app, ["search", "E11.9", "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    top = payload["results"][0]
    assert top["doc_id"] == "diabetes-coding-guide"
    assert "E11.9" in top["text"]
    assert {"lexical", "dense"} <= set(top["retrievers"])
    assert top["heading_path"] == ["Clinical Coding Guide for Diabetes", "Type 2 diabetes"]
    assert payload["filter"].startswith("(in force on")

    result = runner.invoke(
        app, ["search", "dosing table", "--doc-type", "formulary", "--mode", "lexical"]
    )
    assert result.exit_code == 0
    assert "filter: (doc_type in [formulary] and in force on" in result.output
    assert "Antimicrobial" in result.output and "page 1" in result.output

    result = runner.invoke(app, ["docs", "list"])
    assert "5 documents" in result.output

    result = runner.invoke(app, ["docs", "remove", "visiting-hours", "nope"])
    assert result.exit_code == 1
    assert "removed visiting-hours" in result.output


def test_search_rejects_an_empty_question_and_an_unknown_mode(data_dir: Path) -> None:
    assert runner.invoke(app, ["search", "   "]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--mode", "magic"]).exit_code == 2


def test_models_list_and_verify(data_dir: Path) -> None:
    result = runner.invoke(app, ["models", "verify"])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output and "embedder" in result.output
    assert "all-MiniLM" in runner.invoke(app, ["models", "list"]).output
