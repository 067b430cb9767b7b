"""What monitoring sees at ``/metrics`` besides Litestar's request counts and latencies:
answers and refusals by reason, clinicians' flags, how long each step of an answer takes,
ingestion by source with its last success, the documents held, the audit log's size,
checkpoint age and unwitnessed entries, and emergency grants in force.

Counters and histograms count in this process (with several workers, each reports its
own; Prometheus sums them). The gauges are read from the data directory at each scrape,
so every worker reports the same.
"""

from __future__ import annotations

import datetime as dt
import time

from prometheus_client import Counter, Gauge, Histogram

from appliance.answer.records import Answer
from audit.reader import LogReader
from services.state import ServiceState

ANSWERS = Counter(
    "clinical_appliance_answers",
    "Questions answered or refused; a refusal by its reason code",
    ["outcome", "reason"],
)
FEEDBACK = Counter(
    "clinical_appliance_feedback", "Answers flagged by clinicians, by kind", ["kind"]
)
STEP_SECONDS = Histogram(
    "clinical_appliance_answer_step_seconds",
    "Seconds each step of an answer took",
    ["step"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
INGESTED = Counter(
    "clinical_appliance_ingested_documents",
    "Documents ingested, by source (upload, command) and outcome",
    ["source", "outcome"],
)
LAST_INGESTION = Gauge(
    "clinical_appliance_ingestion_last_success_timestamp_seconds",
    "When a document from this source was last added or updated",
    ["source"],
)
DOCUMENTS = Gauge(
    "clinical_appliance_documents", "Documents in the catalog, by sensitivity", ["sensitivity"]
)
CHUNKS = Gauge("clinical_appliance_chunks", "Passages the catalog vouches for")
AUDIT_ENTRIES = Gauge("clinical_appliance_audit_entries", "Entries in the audit log")
CHECKPOINT_AGE = Gauge(
    "clinical_appliance_audit_last_checkpoint_age_seconds",
    "Seconds since the latest signed checkpoint",
)
UNWITNESSED = Gauge(
    "clinical_appliance_audit_unwitnessed_entries",
    "Entries no witness has seen a checkpoint of yet (what a cut could remove unseen)",
)
BREAK_GLASS_ACTIVE = Gauge(
    "clinical_appliance_break_glass_active_grants", "Emergency access grants in force"
)


def answered(answer: Answer) -> None:
    outcome = "refused" if answer.refused else "answered"
    reason = answer.refusal.code if answer.refusal is not None else ""
    ANSWERS.labels(outcome=outcome, reason=reason).inc()
    for step, seconds in answer.timings.items():
        STEP_SECONDS.labels(step=step).observe(seconds)


def ingested(source: str, status: str) -> None:
    INGESTED.labels(source=source, outcome=status).inc()
    if status in ("added", "updated"):
        LAST_INGESTION.labels(source=source).set(time.time())


def refresh(state: ServiceState) -> None:
    """The gauges as the data directory holds them now (at each scrape)."""
    appliance = state.appliance
    catalog = appliance.catalog
    counts: dict[str, int] = {}
    for record in catalog.documents():
        if record.state == "indexed":
            sensitivity = record.metadata.sensitivity
            counts[sensitivity] = counts.get(sensitivity, 0) + 1
    for sensitivity in ("public", "internal", "confidential", "restricted"):
        DOCUMENTS.labels(sensitivity=sensitivity).set(counts.get(sensitivity, 0))
    CHUNKS.set(catalog.chunk_count())
    log = appliance.audit_log
    AUDIT_ENTRIES.set(log.size)
    latest = LogReader(appliance.settings.audit_dir).latest_checkpoint()
    if latest is not None:
        made = dt.datetime.fromisoformat(latest.time.replace("Z", "+00:00"))
        CHECKPOINT_AGE.set((dt.datetime.now(dt.UTC) - made).total_seconds())
    witnessed = log.last_witnessed
    UNWITNESSED.set(log.size - (witnessed.size if witnessed is not None else 0))
    BREAK_GLASS_ACTIVE.set(appliance.break_glass.active_count())
