"""The GPU host's compose file, checked without a container engine: by docker-compose's
own ``config`` and against the compose specification's JSON schema (from compose-go,
fetched once through the Go module proxy). A file with a mistake is refused by both, so
neither check passes by default."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "compose"
COMPOSE_GO = "github.com/compose-spec/compose-go/v2@v2.16.2"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    downloaded = subprocess.run(
        ["go", "mod", "download", "-json", COMPOSE_GO],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    directory = Path(json.loads(downloaded.stdout)["Dir"])
    return json.loads((directory / "schema" / "compose-spec.json").read_text("utf-8"))


def _problems(schema: dict[str, Any], document: object) -> list[str]:
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(document)]


def _config(directory: Path) -> subprocess.CompletedProcess[str]:
    """docker-compose as an administrator runs it: Debian's, with only PATH and HOME (so
    that nothing of the test's own Python environment reaches it)."""
    return subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "config", "-q"],
        cwd=directory, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )  # fmt: skip


def test_the_compose_file_follows_the_specification(schema: dict[str, Any]) -> None:
    document = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text("utf-8"))
    assert _problems(schema, document) == []
    services = document["services"]
    published = {name for name, s in services.items() if s.get("ports")}
    assert published == {"proxy"}  # nothing but the TLS proxy reaches the intranet
    gpu = services["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]
    assert all(
        "healthcheck" in s and "limits" in s["deploy"]["resources"] for s in services.values()
    )
    assert document["networks"]["backend"]["internal"] is True
    broken = {
        **document,
        "services": {**services, "qdrant": {**services["qdrant"], "prots": ["6333"]}},
    }
    assert any("prots" in p for p in _problems(schema, broken))


@pytest.mark.skipif(
    shutil.which("docker-compose") is None,
    reason="needs Debian's docker-compose (.ci/run installs it)",
)
def test_docker_compose_accepts_the_file_and_refuses_a_broken_one(tmp_path: Path) -> None:
    accepted = _config(COMPOSE)
    assert accepted.returncode == 0, accepted.stderr
    shutil.copytree(COMPOSE, tmp_path / "compose")
    broken = tmp_path / "compose" / "docker-compose.yml"
    broken.write_text(broken.read_text("utf-8").replace("    ulimits:", "    ulimitz:", 1))
    refused = _config(tmp_path / "compose")
    assert refused.returncode != 0 and "ulimitz" in refused.stderr
