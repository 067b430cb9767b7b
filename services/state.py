"""What the services hold for their whole life: the appliance (opened once: models and
stores are loaded once, and qdrant-edge admits one process per data directory), the
local accounts, the token validator, the process that reads documents for ingestion,
ingestion jobs, and the last audit verification.
Sessions, failed sign-ins and jobs are also in the file all worker processes share."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from appliance.document_reader import PreparationProcess
from appliance.engines import Appliance
from appliance.ingest.pipeline import IngestReport
from appliance.ingest.preparation import DocumentOutcome
from appliance.owner import StoreOwner
from appliance.settings import ServiceSettings
from appliance.warm_up import warm_up
from services.accounts import LocalAccounts
from services.fair_lock import FairLock
from services.identity import TokenValidator
from services.sessions import SessionCookies, SessionStore, SignInThrottle
from services.shared import load_job, save_job, shared_database

log = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestJob:
    job_id: str
    user_id: str
    files: list[str]
    state: str = "queued"  # queued, running, done, failed
    done: int = 0
    outcomes: list[dict[str, object]] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class Verification:
    at: str
    ok: bool
    entries: int
    checkpoints: int
    problems: list[str]


class ServiceState:
    def __init__(self, appliance: Appliance, settings: ServiceSettings | None = None) -> None:
        self.appliance = appliance
        settings = settings or appliance.settings.services
        self.accounts = LocalAccounts(appliance.settings.access_dir / "accounts.json")
        lifetime = int(settings.session_hours * 3600)
        self.shared = shared_database(appliance.settings.data_dir)
        # Sessions outlive a restart (and a worker that starts after another): each ends
        # at its own time, on sign-out, or when its account's password or removal
        # changes its stamp; 'appliance-web accounts sign-out-everyone' ends them all.
        self.sessions = SessionStore(self.shared, lifetime)
        self.cookies = SessionCookies(settings.secure_cookies, lifetime)
        self.sign_in_throttle = SignInThrottle(self.shared, settings.login_per_minute)
        self.tokens = (
            TokenValidator(settings.jwks_file, settings.jwt_issuer, settings.jwt_audience)
            if settings.jwks_file
            else None
        )
        # One question or ingestion at a time through the engines: the stores and models
        # are shared, and the 2-core embedded default gains nothing from interleaving.
        # Granted in turn; ingestion takes it only to write a document it has read.
        self.engine_lock = FairLock()
        self.preparation = PreparationProcess(appliance.settings)
        """Where uploads and the operator's ingestion are read, outside the engines."""
        self.jobs: dict[str, IngestJob] = {}
        self.stopping = threading.Event()
        """Set when the service shuts down: ingestion jobs stop before their next document."""
        self.warmed = threading.Event()
        """Set once the models are loaded and have run once (``appliance.warm_up``)."""
        self.last_verification: Verification | None = None
        self.store_owner: StoreOwner | None = None
        """Set while this service holds the embedded stores for the operator's commands."""
        self.uploads_dir: Path = appliance.settings.data_dir / "uploads"

    def warm_up(self) -> None:
        """Load and run every model once, holding the engines (a question that comes
        meanwhile waits for it, as it would have waited to load them itself)."""
        try:
            with self.engine_lock:
                timings = warm_up(self.appliance)
            log.info("warm-up done in %.1f s: %s", sum(timings.values()), timings)
        except Exception:  # the first question then loads what is missing
            log.exception("warm-up failed; the first question will load the models")
        finally:
            self.warmed.set()

    def ingest(
        self,
        path: Path,
        defaults: Mapping[str, object],
        actor: str,
        on_outcome: Callable[[DocumentOutcome], None] | None = None,
    ) -> IngestReport:
        """One file (or folder): read in the document reader while questions go on,
        then written holding the engines. ``PreparationStopped`` when the service stops
        first: nothing of the file was written."""
        prepared = self.preparation.prepare([path], defaults)
        with self.engine_lock:
            return self.appliance.ingestor.write(prepared, on_outcome=on_outcome, actor=actor)

    def new_job(self, user_id: str, files: list[str]) -> IngestJob:
        job = IngestJob(str(uuid.uuid4()), user_id, files)
        self.jobs[job.job_id] = job
        self.publish(job)
        return job

    def publish(self, job: IngestJob) -> None:
        """The job as it stands, for whichever worker process is asked about it."""
        save_job(self.shared, job.job_id, dataclasses.asdict(job))

    def job(self, job_id: str) -> IngestJob | None:
        body = load_job(self.shared, job_id)
        return IngestJob(**body) if body is not None else None  # type: ignore[arg-type]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
