from pathlib import Path

import pytest

from appliance.settings import Settings


def test_defaults_need_no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    settings = Settings()
    assert settings.lexical_engine == "tantivy"
    assert settings.vector_engine == "qdrant-edge"
    assert settings.retrieval.rrf_k == 60


def test_environment_and_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "appliance.toml"
    config.write_text('data_dir = "/srv/appliance"\n[retrieval]\nrrf_k = 30\n')
    monkeypatch.setenv("APPLIANCE_CONFIG", str(config))
    monkeypatch.delenv("APPLIANCE_DATA_DIR", raising=False)
    monkeypatch.setenv("APPLIANCE_LIMITS__MAX_FILE_BYTES", "1000")
    settings = Settings()
    assert settings.data_dir == Path("/srv/appliance")
    assert settings.retrieval.rrf_k == 30
    assert settings.limits.max_file_bytes == 1000


def test_a_missing_config_file_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError, match="APPLIANCE_CONFIG names"):
        Settings()


def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPLIANCE_RETRIEVAL__RRF_K", "0")
    with pytest.raises(ValueError, match="rrf_k"):
        Settings()
