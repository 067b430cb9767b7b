"""One line in plain words for each kind of audit entry, as a compliance officer reads
the log: who did what to which document, why, and what came of it. The entry itself
stays the evidence; the line is only its reading."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Names = Mapping[str, str]
"""Document and passage ids to what a person calls them ("Sepsis bundle v3, Antibiotics");
an id missing from it is shown as it is."""

_OPENED_BECAUSE = {
    "citation": "from an answer's citation",
    "direct": "directly",
    "break-the-glass": "under emergency access",
}


def summary(entry: Mapping[str, Any], names: Names | None = None) -> str:
    """The entry's line; an unknown kind of entry falls back to its first telling field."""
    details: Mapping[str, Any] = entry.get("details", {})
    name = _namer(names or {})
    describe = _SUMMARIES.get(str(entry.get("type")))
    if describe is not None:
        return describe(details, name)
    for key in ("doc_id", "reason", "action", "decision"):
        if key in details:
            return f"{key}: {details[key]}"
    return ""


def named_ids(entries: list[Mapping[str, Any]]) -> set[str]:
    """Every document and passage id the lines of ``entries`` would name."""
    ids: set[str] = set()
    for entry in entries:
        details = entry.get("details", {})
        ids.update(str(i) for i in details.get("chunk_ids", []) if entry["type"] != "ingestion")
        if "doc_id" in details:
            ids.add(str(details["doc_id"]))
    return ids


def _namer(names: Names) -> Callable[[str], str]:
    return lambda some_id: names.get(some_id, some_id)


def _asked(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    searched = details.get("searched_as")
    read = f' (searched as "{searched}")' if searched else ""
    candidates = details.get("candidates", [])
    denied = sum(1 for c in candidates if str(c.get("access", "")).startswith("denied"))
    withheld = f", {denied} withheld by policy" if denied else ""
    return f'asked "{details.get("query", "")}"{read}: {len(candidates)} passages found{withheld}'


def _answered(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    question = f'"{details.get("query", "")}"'
    if details.get("refusal"):
        return f"{question}: not answered ({details['refusal']})"
    sentences = details.get("sentences", [])
    cited = {c.get("doc_id") for s in sentences for c in s.get("citations", [])}
    decision = f", in short: {details['decision']}" if details.get("decision") else ""
    return (
        f"{question}: answered in {len(sentences)} sentences citing "
        f"{len(cited)} document{'s' if len(cited) != 1 else ''}{decision}"
    )


def _feedback(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    documents = ", ".join(
        f"{d['title']} (owner {d['owner'] or 'none'})" for d in details.get("documents", [])
    )
    comment = f": {details['comment']}" if details.get("comment") else ""
    return (
        f"flagged {details.get('kind')}{comment} | on: {details.get('query')} "
        f"| cited: {documents or 'none'}"
    )


def _policy_change(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    changes = [f"added {rule}" for rule in details.get("added", [])]
    changes += [f"removed {rule}" for rule in details.get("removed", [])]
    versions = f"(policy {details.get('version_before')} -> {details.get('version_after')})"
    return f"{'; '.join(changes) or 'policy rewritten'} {versions}"


def _break_glass_granted(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    patient = details.get("patient_id") or "no patient named"
    return (
        f"emergency access opened (grant {details.get('grant_id')}) for {patient} until "
        f"{details.get('expires_at')}; reason: {details.get('reason')}"
    )


def _break_glass_use(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    shown = [name(str(c)) for c in details.get("chunk_ids", [])]
    return f"emergency access (grant {details.get('grant_id')}) showed: {'; '.join(shown)}"


def _break_glass_ended(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    return f"emergency access of {details.get('user')} ended (grant {details.get('grant_id')})"


def _break_glass_reviewed(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    note = f": {details['note']}" if details.get("note") else ""
    return f"emergency access grant {details.get('grant_id')} reviewed{note}"


def _document_view(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    why = _OPENED_BECAUSE.get(str(details.get("why")), str(details.get("why")))
    return f"opened {name(str(details.get('doc_id')))} (version {details.get('version')}) {why}"


def _ingestion(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    departments = ", ".join(details.get("departments", [])) or "no departments"
    return (
        f"added {name(str(details.get('doc_id')))} version {details.get('version')}: "
        f"{len(details.get('chunk_ids', []))} passages, {details.get('sensitivity')}, "
        f"for {departments}"
    )


def _removal(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    return f"removed {name(str(details.get('doc_id')))}"


def _access_mismatch(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    return (
        f"the search filter and the policy ({details.get('policy')}) disagreed about "
        f"{name(str(details.get('chunk_id')))}; it was withheld"
    )


def _audit_review(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    rest = {k: v for k, v in details.items() if k not in ("action", "at")}
    told = ", ".join(f"{k} {v}" for k, v in rest.items())
    return f"{details.get('action')} of the audit log{': ' + told if told else ''}"


def _account_change(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    changes = "; ".join(f"{k} {', '.join(v)}" for k, v in details.get("changes", {}).items())
    return f"{details.get('action')} {details.get('user')}{': ' + changes if changes else ''}"


def _signed(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    return f"by {details.get('method')}"


def _sign_in_failed(details: Mapping[str, Any], name: Callable[[str], str]) -> str:
    return f"failed sign-in as {details.get('attempted_user')!r} by {details.get('method')}"


_SUMMARIES: dict[str, Callable[[Mapping[str, Any], Callable[[str], str]], str]] = {
    "question": _asked,
    "answer": _answered,
    "feedback": _feedback,
    "policy_change": _policy_change,
    "break_glass_granted": _break_glass_granted,
    "break_glass_use": _break_glass_use,
    "break_glass_ended": _break_glass_ended,
    "break_glass_reviewed": _break_glass_reviewed,
    "document_view": _document_view,
    "ingestion": _ingestion,
    "removal": _removal,
    "access_mismatch": _access_mismatch,
    "audit_review": _audit_review,
    "account_change": _account_change,
    "sign_in": _signed,
    "sign_out": _signed,
    "sign_in_failed": _sign_in_failed,
}
