from pathlib import Path

import pytest
from pydantic import ValidationError

from appliance.settings import Settings


def test_defaults_need_no_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    monkeypatch.delenv("APPLIANCE_DATA_DIR", raising=False)
    monkeypatch.delenv("APPLIANCE_GRAPH__ENGINE", raising=False)
    settings = Settings()
    assert settings.data_dir.is_absolute()
    assert settings.lexical.engine == "tantivy" and settings.vectors.engine == "qdrant-edge"
    assert settings.graph.engine == "arcadedb"
    assert settings.shipped_policy.is_file() and settings.ward_language.is_file()
    assert settings.retrieval.rrf_k == 60


def test_a_setting_nothing_reads_is_refused_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    with pytest.raises(ValidationError, match="lexical_engine"):
        Settings(lexical_engine="opensearch")
    with pytest.raises(ValidationError, match="top_k"):
        Settings(retrieval={"top_k": 5})


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


def test_every_setting_says_what_it_does_and_the_settings_page_is_current() -> None:
    from pydantic import BaseModel

    from scripts.settings_table import PAGE, table

    groups = [Settings] + [
        f.annotation
        for f in Settings.model_fields.values()
        if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)
    ]
    undescribed = [
        f"{group.__name__}.{name}"
        for group in groups
        for name, field in group.model_fields.items()
        if not field.description
        and not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel))
    ]
    assert undescribed == []
    assert PAGE.read_text(encoding="utf-8") == table(), "run scripts/settings_table.py"
