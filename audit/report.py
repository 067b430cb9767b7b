"""A period's report for the compliance office, read from the log alone: activity by
user, department, document and event type; how often answers were refused or flagged;
every emergency access with its reason and whether it was reviewed; and alerts for
what needs a person's attention. Counts, never judgements: the entries stay the evidence.

Alerts, with the rules written where an officer can read them (README, "Audit"):

- an emergency-access grant not reviewed ``review_days`` after it was opened;
- a user who asked more than ``UNUSUAL_FACTOR`` times the median of the period's askers
  (and at least ``UNUSUAL_MINIMUM`` questions), or opened that many more documents;
- ``FAILED_SIGN_INS`` or more failed sign-ins under one name;
- any disagreement between the search filter and the policy (``access_mismatch``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

UNUSUAL_FACTOR = 3.0
UNUSUAL_MINIMUM = 20
FAILED_SIGN_INS = 5


@dataclass(slots=True)
class UserActivity:
    questions: int = 0
    answered: int = 0
    refused: int = 0
    flagged: int = 0
    documents_opened: int = 0
    emergency_accesses: int = 0


@dataclass(slots=True)
class DocumentActivity:
    title: str = ""
    cited: int = 0
    opened: int = 0
    flagged: int = 0


@dataclass(slots=True)
class EmergencyAccess:
    grant_id: int
    user: str
    opened_at: str
    reason: str
    patient_id: str | None
    passages_shown: int = 0
    reviewed_by: str | None = None
    reviewed_at: str | None = None
    review_note: str = ""


@dataclass(slots=True)
class PeriodReport:
    since: str | None
    until: str | None
    entries: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_user: dict[str, UserActivity] = field(default_factory=dict)
    by_department: dict[str, UserActivity] = field(default_factory=dict)
    by_document: dict[str, DocumentActivity] = field(default_factory=dict)
    refusal_rate: float | None = None
    """Refused answers over all answers (None when nothing was answered or refused)."""
    flag_rate: float | None = None
    """Flagged answers over all answers."""
    emergency_access: list[EmergencyAccess] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_csv(self) -> str:
        """One row per figure (section, name, measure, value): long, so that a
        spreadsheet pivots it however the office wants."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["section", "name", "measure", "value"])
        writer.writerow(["period", "since", "", self.since or ""])
        writer.writerow(["period", "until", "", self.until or ""])
        writer.writerow(["totals", "entries", "count", self.entries])
        for rate, value in (("refusal rate", self.refusal_rate), ("flag rate", self.flag_rate)):
            writer.writerow(["totals", rate, "fraction", "" if value is None else f"{value:.4f}"])
        for kind, count in sorted(self.by_type.items()):
            writer.writerow(["event type", kind, "count", count])
        for section, table in (("user", self.by_user), ("department", self.by_department)):
            for name, activity in sorted(table.items()):
                for measure, value in asdict(activity).items():
                    writer.writerow([section, name, measure, value])
        for doc_id, document in sorted(self.by_document.items()):
            for measure, value in asdict(document).items():
                if measure != "title":
                    writer.writerow(["document", f"{document.title} ({doc_id})", measure, value])
        for grant in self.emergency_access:
            for measure, value in asdict(grant).items():
                if measure != "grant_id":
                    writer.writerow(["emergency access", grant.grant_id, measure, value or ""])
        for alert in self.alerts:
            writer.writerow(["alert", "", "", alert])
        return out.getvalue()


def period_report(
    entries: Iterable[Mapping[str, Any]],
    since: str | None,
    until: str | None,
    *,
    reviews: Iterable[Mapping[str, Any]] = (),
    departments: Mapping[str, Iterable[str]] | None = None,
    titles: Mapping[str, str] | None = None,
    now: dt.datetime | None = None,
    review_days: int = 3,
) -> PeriodReport:
    """The report of ``entries`` (the period's, oldest first). ``reviews``: every
    ``break_glass_reviewed`` entry, of any time (a grant may be reviewed after the period
    ends); ``departments``: each user's departments as the subjects directory has them
    now; ``titles``: document titles for ids the entries do not title."""
    report = PeriodReport(since, until)
    users: defaultdict[str, UserActivity] = defaultdict(UserActivity)
    documents: defaultdict[str, DocumentActivity] = defaultdict(DocumentActivity)
    types: Counter[str] = Counter()
    failed_sign_ins: Counter[str] = Counter()
    grants: dict[int, EmergencyAccess] = {}
    mismatches = 0
    for entry in entries:
        kind, user = str(entry["type"]), str(entry["actor"]["user"])
        details: Mapping[str, Any] = entry.get("details", {})
        types[kind] += 1
        if kind == "question":
            users[user].questions += 1
        elif kind == "answer":
            if details.get("refusal"):
                users[user].refused += 1
            else:
                users[user].answered += 1
            for doc_id in {
                c["doc_id"] for s in details.get("sentences", []) for c in s["citations"]
            }:
                documents[doc_id].cited += 1
        elif kind == "feedback":
            users[user].flagged += 1
            for cited in details.get("documents", []):
                documents[cited["doc_id"]].flagged += 1
                documents[cited["doc_id"]].title = cited.get("title", "")
        elif kind == "document_view":
            users[user].documents_opened += 1
            documents[str(details.get("doc_id"))].opened += 1
        elif kind == "break_glass_granted":
            users[user].emergency_accesses += 1
            grant_id = int(details["grant_id"])
            grants[grant_id] = EmergencyAccess(
                grant_id, user, str(entry["time"]), str(details.get("reason", "")),
                details.get("patient_id"),
            )  # fmt: skip
        elif kind == "break_glass_use" and int(details.get("grant_id", -1)) in grants:
            grants[int(details["grant_id"])].passages_shown += len(details.get("chunk_ids", []))
        elif kind == "sign_in_failed":
            failed_sign_ins[str(details.get("attempted_user", ""))] += 1
        elif kind == "access_mismatch":
            mismatches += 1
    for review in reviews:
        grant = grants.get(int(review["details"]["grant_id"]))
        if grant is not None and grant.reviewed_at is None:
            grant.reviewed_by = str(review["actor"]["user"])
            grant.reviewed_at = str(review["time"])
            grant.review_note = str(review["details"].get("note", ""))
    for doc_id, document in documents.items():
        document.title = document.title or (titles or {}).get(doc_id, doc_id)

    report.entries = sum(types.values())
    report.by_type = dict(sorted(types.items()))
    report.by_user = dict(sorted(users.items()))
    report.by_department = _by_department(users, departments or {})
    report.by_document = dict(sorted(documents.items()))
    answers = types["answer"]
    if answers:
        report.refusal_rate = sum(u.refused for u in users.values()) / answers
        report.flag_rate = types["feedback"] / answers
    report.emergency_access = sorted(grants.values(), key=lambda g: g.opened_at)
    report.alerts = _alerts(report, failed_sign_ins, mismatches, now, review_days)
    return report


def _by_department(
    users: Mapping[str, UserActivity], departments: Mapping[str, Iterable[str]]
) -> dict[str, UserActivity]:
    """Each department's users added up; a user in two departments counts in both, one
    the subjects directory does not know counts under "(unknown)"."""
    totals: defaultdict[str, UserActivity] = defaultdict(UserActivity)
    for user, activity in users.items():
        for department in list(departments.get(user, ())) or ["(unknown)"]:
            total = totals[department]
            for name, value in asdict(activity).items():
                setattr(total, name, getattr(total, name) + value)
    return dict(sorted(totals.items()))


def _alerts(
    report: PeriodReport,
    failed_sign_ins: Mapping[str, int],
    mismatches: int,
    now: dt.datetime | None,
    review_days: int,
) -> list[str]:
    alerts = []
    now = now or dt.datetime.now(dt.UTC)
    for grant in report.emergency_access:
        opened = dt.datetime.fromisoformat(grant.opened_at.replace("Z", "+00:00"))
        if grant.reviewed_at is None and now - opened > dt.timedelta(days=review_days):
            alerts.append(
                f"emergency access {grant.grant_id} by {grant.user} on {grant.opened_at[:10]} "
                f"not reviewed after {review_days} days (reason: {grant.reason})"
            )
    for measure, said in (("questions", "asked"), ("documents_opened", "opened documents")):
        counts = {u: getattr(a, measure) for u, a in report.by_user.items() if getattr(a, measure)}
        if len(counts) < 2:
            continue
        median = statistics.median(counts.values())
        for user, count in sorted(counts.items()):
            if count >= UNUSUAL_MINIMUM and count > UNUSUAL_FACTOR * median:
                alerts.append(
                    f"{user} {said} {count} times, more than {UNUSUAL_FACTOR:g} times the "
                    f"median of {median:g}"
                )
    for name, count in sorted(failed_sign_ins.items()):
        if count >= FAILED_SIGN_INS:
            alerts.append(f"{count} failed sign-ins as {name!r}")
    if mismatches:
        alerts.append(
            f"the search filter and the policy disagreed {mismatches} times (passages withheld)"
        )
    return alerts
