"""The settings choose the stores: the embedded engines by default, the servers when
named, and a server's secret read from where the settings point, with a clear error
when it is not there."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from appliance.index.qdrant_vectors import QdrantVectorIndex
from appliance.index.stores import open_lexical, open_vectors, qdrant_local_dir
from appliance.index.tantivy_lexical import TantivyLexicalIndex
from appliance.settings import OpenSearchSettings, Settings


def test_the_embedded_engines_are_the_default(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    lexical = open_lexical(settings)
    try:
        assert isinstance(lexical, TantivyLexicalIndex)
    finally:
        lexical.close()


def test_the_qdrant_engine_without_a_url_runs_in_the_data_directory(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, vectors={"engine": "qdrant"})  # type: ignore[arg-type]
    vectors = open_vectors(settings, 8)
    try:
        assert isinstance(vectors, QdrantVectorIndex) and vectors.count() == 0
        assert qdrant_local_dir(tmp_path).is_dir()
    finally:
        vectors.close()


def test_an_unknown_engine_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="tantivy"):
        Settings(data_dir=tmp_path, lexical={"engine": "elasticsearch"})  # type: ignore[arg-type]


def test_an_index_prefix_must_be_a_valid_index_name() -> None:
    with pytest.raises(ValidationError, match="index_prefix"):
        OpenSearchSettings(index_prefix="Bad Name")


def test_the_password_comes_from_a_file_or_an_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_file = tmp_path / "opensearch.password"
    secret_file.write_text("s3cret-from-file\n")
    assert OpenSearchSettings(password_file=secret_file).secret() == "s3cret-from-file"
    monkeypatch.setenv("SEARCH_PASSWORD", "s3cret-from-env")
    assert OpenSearchSettings(password_env="SEARCH_PASSWORD").secret() == "s3cret-from-env"
    assert OpenSearchSettings().secret() is None


def test_a_named_secret_that_is_missing_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEARCH_PASSWORD", raising=False)
    with pytest.raises(ValueError, match=r"\$SEARCH_PASSWORD, which is not set"):
        OpenSearchSettings(password_env="SEARCH_PASSWORD").secret()
    with pytest.raises(ValueError, match="cannot be read or is empty"):
        OpenSearchSettings(password_file=tmp_path / "absent").secret()
    (tmp_path / "empty").write_text("")
    with pytest.raises(ValueError, match="cannot be read or is empty"):
        OpenSearchSettings(password_file=tmp_path / "empty").secret()
