"""The JSON API, one router per concern, each declaring who may call it (guards), what
its handlers are given (dependencies) and its limits:

- ``clinician``: ask, open a cited document, history, break-the-glass, who am I (signed in);
- ``ingestion``: upload and follow a job (the policy's ``ingest`` action);
- ``audit``: search, records with proofs, status, verify, export (``review-audit``);
- ``operations``: health and readiness (no sign-in; ``/ready`` for the operations
  addresses only);
- ``operator_commands``: ingest, remove, search, ask and eval for the ``appliance`` command while
  this service holds the embedded stores (the data directory account's token).

``layers`` holds the guards and dependencies.
"""

from __future__ import annotations

from litestar import Router
from litestar.middleware.rate_limit import RateLimitConfig

from appliance.settings import ServiceSettings
from services.routes import (
    administration,
    audit,
    clinician,
    ingestion,
    operations,
    operator_commands,
)
from services.routes.layers import DEPENDENCIES, may, signed_in


def api_routers(settings: ServiceSettings, ask_limit: RateLimitConfig) -> list[Router]:
    return [
        Router(
            "/api",
            route_handlers=[clinician.ask],
            guards=[signed_in],
            dependencies=DEPENDENCIES,
            middleware=[ask_limit.middleware],
        ),
        Router(
            "/api",
            route_handlers=[
                clinician.document,
                clinician.history,
                clinician.past_answer,
                clinician.feedback,
                clinician.start_break_glass,
                clinician.end_break_glass,
                clinician.me,
            ],
            guards=[signed_in],
            dependencies=DEPENDENCIES,
        ),
        Router(
            "/api",
            route_handlers=[ingestion.upload, ingestion.job_status],
            guards=[may("ingest")],
            dependencies=DEPENDENCIES,
            request_max_body_size=settings.max_upload_bytes,
        ),
        Router(
            "/api/admin",
            route_handlers=[
                administration.documents,
                administration.remove_document,
                administration.jobs,
            ],
            guards=[may("ingest")],
            dependencies=DEPENDENCIES,
        ),
        Router(
            "/api/admin",
            route_handlers=[
                administration.users,
                administration.add_user,
                administration.change_user,
                administration.remove_user,
            ],
            guards=[may("administer")],
            dependencies=DEPENDENCIES,
        ),
        Router(
            "/api/audit",
            route_handlers=[
                audit.audit_records,
                audit.audit_record,
                audit.audit_status,
                audit.audit_verify,
                audit.audit_export,
                audit.audit_report,
                audit.audit_report_csv,
                audit.review_break_glass,
            ],
            guards=[may("review-audit")],
            dependencies=DEPENDENCIES,
        ),
        Router(
            "/",
            route_handlers=[operations.health, operations.ready],
            dependencies=DEPENDENCIES,
        ),
        Router(
            "/api/operator",
            route_handlers=[
                operator_commands.ingest,
                operator_commands.remove,
                operator_commands.search,
                operator_commands.ask,
                operator_commands.golden_eval,
            ],
            guards=[operator_commands.operator],
            dependencies=DEPENDENCIES,
            include_in_schema=False,
        ),
    ]
