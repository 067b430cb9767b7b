"""The warm-up after a start runs every model an answer needs, on the real appliance,
and leaves no trace in the audit log (it asks nothing for anyone)."""

from __future__ import annotations

from appliance.engines import Appliance
from appliance.warm_up import warm_up


def test_warm_up_runs_each_model_once_and_records_nothing(sample_appliance: Appliance) -> None:
    entries = sample_appliance.audit_log.size
    timings = warm_up(sample_appliance)
    assert {"answer pipeline", "question reader", "verifier", "generator"} <= timings.keys()
    stages = {f"rerank: {stage.name}" for stage in sample_appliance.query.stages}
    assert stages and stages <= timings.keys()
    assert sample_appliance.audit_log.size == entries
