"""``audit``: verify, prove, inspect and export the appliance's audit log.

Needs only this package and a crypto library, so that a compliance officer can check a
copy of the log on their own machine. Exit status 0 only when the command succeeded
(for ``verify``: when everything holds).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

from audit.checkpoints import Checkpoint, load_or_create_key, load_public_key
from audit.entries import EntryError, time_bound
from audit.index import AuditIndex, Query
from audit.log import AuditLog
from audit.merkle import verify_inclusion
from audit.reader import LogReader, exported
from audit.report import PeriodReport, period_report
from audit.store import PRIVATE_KEY_FILE, PUBLIC_KEY_FILE
from audit.verify import verify_log
from audit.witness import read_witnessed


def default_directory() -> Path:
    if "AUDIT_LOG_DIR" in os.environ:
        return Path(os.environ["AUDIT_LOG_DIR"])
    if "APPLIANCE_DATA_DIR" in os.environ:
        return Path(os.environ["APPLIANCE_DATA_DIR"]) / "audit"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "clinical-appliance" / "audit"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audit", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="the log directory (default: $AUDIT_LOG_DIR, else $APPLIANCE_DATA_DIR/audit)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    verify = commands.add_parser("verify", help="check every entry, checkpoint and signature")
    verify.add_argument("--public-key", type=Path, help="your own copy of the public key")
    verify.add_argument(
        "--from-checkpoint", type=Path, help="a checkpoint you kept: the log must extend it"
    )
    verify.add_argument(
        "--witness",
        type=Path,
        help="the witness's copy of the checkpoints (its directory, or the syslog "
        "collector's file): the log must still hold everything they cover",
    )

    prove = commands.add_parser("prove", help="an inclusion proof for one entry")
    prove.add_argument("entry", type=int)
    prove.add_argument("--size", type=int, help="prove against this tree size")

    commands.add_parser("checkpoint", help="print the latest signed checkpoint")
    commands.add_parser("key", help="print the public key auditors verify with")
    commands.add_parser(
        "init", help="create the log and its signing key if absent; print the public key"
    )

    show = commands.add_parser("show", help="print one entry")
    show.add_argument("entry", type=int)

    export = commands.add_parser("export", help="entries of a time range, with proofs")
    export.add_argument("--from", dest="since", type=_iso, help=_FROM)
    export.add_argument("--to", dest="until", type=_iso, help=_TO)
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--output", type=Path, help="file to write (default: standard output)")

    query = commands.add_parser("query", help="find entries through the secondary index")
    query.add_argument("--from", dest="since", type=_iso, help=_FROM)
    query.add_argument("--to", dest="until", type=_iso, help=_TO)
    query.add_argument("--user")
    query.add_argument("--type", dest="event_type")
    query.add_argument("--doc", dest="doc_id")
    query.add_argument("--chunk", dest="chunk_id")
    query.add_argument("--limit", type=int, default=100)

    feedback = commands.add_parser(
        "feedback", help="clinicians' flags on answers, for the compliance office and owners"
    )
    feedback.add_argument("--owner", help="only answers citing documents this owner keeps")
    feedback.add_argument("--from", dest="since", type=_iso, help=_FROM)
    feedback.add_argument("--to", dest="until", type=_iso, help=_TO)

    report = commands.add_parser(
        "report", help="a period's activity, emergency accesses and alerts, to hand on"
    )
    report.add_argument("--from", dest="since", type=_iso, help=_FROM)
    report.add_argument("--to", dest="until", type=_iso, help=_TO)
    report.add_argument("--format", choices=("text", "csv", "json"), default="text")
    report.add_argument(
        "--review-days", type=int, default=3,
        help="an emergency access not reviewed after this many days is an alert (default 3)",
    )  # fmt: skip
    report.add_argument(
        "--fail-on-alerts", action="store_true",
        help="exit 1 when there is any alert (for a scheduled check)",
    )  # fmt: skip

    commands.add_parser("reindex", help="rebuild the secondary index from the log")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    directory: Path = args.dir or default_directory()
    try:
        return _COMMANDS[args.command](directory, args)
    except (FileNotFoundError, IndexError, ValueError) as error:
        print(f"audit: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) stopped early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _verify(directory: Path, args: argparse.Namespace) -> int:
    key_path = args.public_key or directory / PUBLIC_KEY_FILE
    public_key = load_public_key(key_path)
    trusted = None
    if args.from_checkpoint is not None:
        trusted = Checkpoint.from_line(args.from_checkpoint.read_bytes().strip())
    witnessed = read_witnessed(args.witness) if args.witness is not None else []
    if args.witness is not None and not witnessed:
        print(f"FAIL the witness {args.witness} holds no checkpoint")
        return 1
    report = verify_log(directory, public_key, trusted, witnessed)
    print(f"{report.entries} entries, {report.checkpoints} checkpoints, key {key_path}")
    if report.last_witnessed is not None:
        last = report.last_witnessed
        print(
            f"witness: {report.witnessed} checkpoints, the last at size {last.size} "
            f"({last.time}); {max(report.unwitnessed_entries, 0)} entries after it"
        )
    if report.ok:
        print("OK: every entry, checkpoint and signature holds")
        return 0
    for problem in report.problems:
        print(f"FAIL {problem}")
    if report.first_bad_entry is not None:
        print(f"first bad entry: {report.first_bad_entry}")
    return 1


def _prove(directory: Path, args: argparse.Namespace) -> int:
    reader = LogReader(directory)
    size = args.size or reader.proof_size(args.entry)
    proof = reader.inclusion_proof(args.entry, size)
    checkpoint = next((c for c in reader.checkpoints() if c.size == size), None)
    assert verify_inclusion(proof.leaf_hash, proof.position, size, proof.path, proof.root)
    _print_json(
        {
            "entry": proof.position,
            "leaf_hash": proof.leaf_hash.hex(),
            "tree_size": size,
            "root": proof.root.hex(),
            "path": [h.hex() for h in proof.path],
            "checkpoint": json.loads(checkpoint.line()) if checkpoint else None,
        }
    )
    return 0


def _checkpoint(directory: Path, _args: argparse.Namespace) -> int:
    latest = LogReader(directory).latest_checkpoint()
    if latest is None:
        print("audit: no checkpoint yet", file=sys.stderr)
        return 1
    sys.stdout.write(latest.line().decode())
    return 0


def _key(directory: Path, _args: argparse.Namespace) -> int:
    sys.stdout.write((directory / PUBLIC_KEY_FILE).read_text())
    return 0


def _init(directory: Path, _args: argparse.Namespace) -> int:
    """At install, before the service first runs: the key exists (0600, the directory
    0700) and its public half can be handed to the compliance office at once."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    load_or_create_key(directory / PRIVATE_KEY_FILE, directory / PUBLIC_KEY_FILE)
    return _key(directory, _args)


def _show(directory: Path, args: argparse.Namespace) -> int:
    record = LogReader(directory).record(args.entry)
    _print_json(
        {
            "entry": record.position,
            "leaf_hash": record.leaf_hash.hex(),
            **json.loads(record.entry),
        }
    )
    return 0


_FROM = "ISO date or time, inclusive (local time unless it names a zone)"
_TO = "ISO time, exclusive; or a date, which includes that whole day"


def _iso(value: str) -> str:
    try:
        time_bound(value)
    except EntryError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def _export(directory: Path, args: argparse.Namespace) -> int:
    reader = LogReader(directory)
    latest = reader.latest_checkpoint()
    rows = list(exported(reader, latest, args.since, args.until))
    if not rows:  # said, so that an empty file is never taken for a quiet period's record
        span = f"from {args.since or 'the start'} to {args.until or 'now'}"
        print(f"no entries {span}: nothing exported", file=sys.stderr)
    output = args.output.open("w", newline="") if args.output else sys.stdout
    try:
        if args.format == "jsonl":
            for row in rows:
                output.write(json.dumps(row, sort_keys=True) + "\n")
        else:
            writer = csv.writer(output)
            writer.writerow(
                ["entry", "time", "type", "user", "request_id", "leaf_hash", "tree_size",
                 "root", "proof", "checkpoint_signature", "entry_json"]
            )  # fmt: skip
            for row in rows:
                entry = row["entry_json"]
                writer.writerow(
                    [row["entry"], entry["time"], entry["type"], entry["actor"]["user"],
                     entry["request_id"], row["leaf_hash"], row["tree_size"], row["root"],
                     " ".join(row["proof"]), row["checkpoint_signature"],
                     json.dumps(entry, sort_keys=True, separators=(",", ":"))]
                )  # fmt: skip
    finally:
        if args.output:
            output.close()
    return 0


def _query(directory: Path, args: argparse.Namespace) -> int:
    with AuditLog(directory) as log:
        index = AuditIndex(log)
        positions = index.positions(
            Query(args.since, args.until, args.user, args.event_type, args.doc_id,
                  args.chunk_id, args.limit)
        )  # fmt: skip
        index.close()
    wanted = set(positions)
    # The log itself, never the index, is shown: one pass over it from the first match.
    records = LogReader(directory).records(min(wanted)) if wanted else iter(())
    for record in records:
        if record.position in wanted:
            entry = {"entry": record.position, **json.loads(record.entry)}
            sys.stdout.write(json.dumps(entry) + "\n")
    return 0


def _feedback(directory: Path, args: argparse.Namespace) -> int:
    """One line per flag: when, what kind, who, on which question, the comment, and the
    documents the answer cited with their owners; a document owner's list with --owner."""
    with AuditLog(directory) as log:
        index = AuditIndex(log)
        positions = index.positions(
            Query(args.since, args.until, event_type="feedback", limit=1_000_000)
        )
        index.close()
    reader = LogReader(directory)
    shown = 0
    for position in positions:
        entry = json.loads(reader.record(position).entry)
        details = entry["details"]
        documents = details.get("documents", [])
        if args.owner and not any(d.get("owner") == args.owner for d in documents):
            continue
        cited = "; ".join(f"{d['title']} v{d['version']} (owner {d['owner']})" for d in documents)
        print(
            f"{entry['time']}  {details['kind']:<9}  {entry['actor']['user']}  "
            f"entry {position}\n  question: {details['query']}\n"
            f"  comment: {details.get('comment') or '(none)'}\n  cited: {cited or '(nothing)'}"
        )
        shown += 1
    print(f"{shown} flagged answer(s)", file=sys.stderr)
    return 0


def _report(directory: Path, args: argparse.Namespace) -> int:
    """The period's report from the log alone (a copy handed to an auditor will do):
    titles and departments are the service's to add, so here documents go by id."""
    since, until = time_bound(args.since), time_bound(args.until, end=True)
    in_period, reviews = [], []
    for record in LogReader(directory).records():
        entry = json.loads(record.entry)
        if entry["type"] == "break_glass_reviewed":
            reviews.append(entry)
        if (since and entry["time"] < since) or (until and entry["time"] >= until):
            continue
        in_period.append(entry)
    report = period_report(
        in_period, args.since, args.until, reviews=reviews, review_days=args.review_days
    )
    if args.format == "csv":
        sys.stdout.write(report.to_csv())
    elif args.format == "json":
        _print_json(report.to_dict())
    else:
        _print_report(report)
    return 1 if args.fail_on_alerts and report.alerts else 0


def _print_report(report: PeriodReport) -> None:
    print(f"Audit report from {report.since or 'the start'} to {report.until or 'now'}")
    print(
        f"{report.entries} entries; refused answers {_rate(report.refusal_rate)}; "
        f"flagged answers {_rate(report.flag_rate)}"
    )
    print("\nEvent types:")
    for kind, count in report.by_type.items():
        print(f"  {kind:<22} {count:>7}")
    print("\nUsers (questions / answered / refused / flagged / opened / emergency):")
    for user, a in report.by_user.items():
        print(
            f"  {user:<22} {a.questions:>5} {a.answered:>5} {a.refused:>5} {a.flagged:>5} "
            f"{a.documents_opened:>5} {a.emergency_accesses:>5}"
        )
    print("\nEmergency access:")
    for grant in report.emergency_access:
        reviewed = f"reviewed by {grant.reviewed_by}" if grant.reviewed_by else "NOT REVIEWED"
        print(
            f"  {grant.grant_id:>4} {grant.opened_at} {grant.user} patient "
            f"{grant.patient_id or '-'}: {grant.reason} ({grant.passages_shown} passages "
            f"shown; {reviewed})"
        )
    if not report.emergency_access:
        print("  none")
    print(f"\nAlerts ({len(report.alerts)}):")
    for alert in report.alerts or ["none"]:
        print(f"  {alert}")


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _reindex(directory: Path, _args: argparse.Namespace) -> int:
    with AuditLog(directory) as log:
        index = AuditIndex(log)
        print(f"indexed {index.rebuild()} entries")
        index.close()
    return 0


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


_COMMANDS = {
    "feedback": _feedback,
    "report": _report,
    "verify": _verify,
    "prove": _prove,
    "checkpoint": _checkpoint,
    "key": _key,
    "init": _init,
    "show": _show,
    "export": _export,
    "query": _query,
    "reindex": _reindex,
}


if __name__ == "__main__":
    sys.exit(main())
