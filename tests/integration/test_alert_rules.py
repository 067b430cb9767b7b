"""The shipped Prometheus alert rules name only metrics the service exports, and each
rule says what to do."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from litestar.testing import TestClient

from appliance.engines import Appliance
from services.app import create_app

RULES = Path(__file__).resolve().parents[2] / "ansible" / "files" / "prometheus-alerts.yml"
METRIC = re.compile(r"\b(clinical_appliance_[a-z_]+)")


@pytest.fixture(scope="module")
def exported(sample_appliance: Appliance) -> Iterator[str]:
    services = sample_appliance.settings.services.model_copy(
        update={"operations_addresses": ["testclient"], "warm_up": False}
    )
    settings = sample_appliance.settings.model_copy(update={"services": services})
    with TestClient(create_app(settings, sample_appliance)) as client:
        yield client.get("/metrics").text


def _family(name: str) -> str:
    return re.sub(r"_(total|bucket|count|sum|created)$", "", name)


def test_every_rule_names_exported_metrics_and_says_what_to_do(exported: str) -> None:
    families = {_family(m) for m in METRIC.findall(exported)}
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"][0]["rules"]
    assert len(rules) >= 6
    for rule in rules:
        named = {_family(m) for m in METRIC.findall(rule["expr"])}
        assert named and named <= families, (rule["alert"], named - families)
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
