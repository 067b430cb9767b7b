"""``appliance policy`` and ``appliance break-glass``: change, inspect and test access."""

from __future__ import annotations

import datetime as dt
import getpass
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from appliance.access.break_glass import BreakGlassError
from appliance.access.guard import AccessDenied
from appliance.access.policy import PolicyError, Rule
from appliance.access.rules import CHUNK_ACTIONS, SYSTEM_ACTIONS, Resource
from appliance.access.vocabulary import read_without_cite
from appliance.cli.common import console, errors, fail, known_subject, open_appliance
from appliance.cli.users import vocabulary

policy_app = typer.Typer(no_args_is_help=True, help="Change, list and test the access policy.")
break_glass_app = typer.Typer(no_args_is_help=True, help="Emergency access, reason required.")

RuleArgument = Annotated[
    list[str],
    typer.Argument(
        help="A rule as in policy.csv, e.g. 'p role:nurse own restricted read allow' "
        "or 'g role:matron role:nurse'."
    ),
]
ActorOption = Annotated[
    str, typer.Option(help="Who makes the change (audited); default: the login name.")
]


def _rule(words: list[str]) -> Rule:
    parts = [p.strip() for w in words for p in w.split(",") if p.strip()]
    if not parts:
        raise fail("give a rule, e.g. 'p role:nurse own restricted read allow'", code=2)
    try:
        return Rule.parse(parts[0], parts[1:])
    except ValueError as error:
        raise fail(str(error), code=2) from None


@policy_app.command("add")
def policy_add(
    rule: RuleArgument,
    actor: ActorOption = "",
    new: Annotated[
        bool, typer.Option("--new", help="Its role or department is new to the site (no typo).")
    ] = False,
) -> None:
    """Add a rule; running services apply it on their next request. A role or
    department the site does not have yet is refused unless --new says it is meant."""
    parsed = _rule(rule)
    if not new:
        with open_appliance() as appliance:
            problem = vocabulary(appliance).unknown_in(parsed)
        if problem:
            raise fail(f"{problem} (--new if it is meant)", code=2)
    _edit(parsed, actor, adding=True)


@policy_app.command("remove")
def policy_remove(rule: RuleArgument, actor: ActorOption = "") -> None:
    """Remove a rule; running services apply it on their next request."""
    _edit(_rule(rule), actor, adding=False)


def _edit(rule: Rule, actor: str, *, adding: bool) -> None:
    with open_appliance() as appliance:
        change = appliance.policy.add if adding else appliance.policy.remove
        try:
            change(rule, actor or getpass.getuser())
            warning = read_without_cite(appliance.policy.current(), rule) if adding else None
        except PolicyError as error:
            raise fail(str(error)) from None
    console.print(f"{'added' if adding else 'removed'}: {escape(rule.line())}")
    if warning:
        errors.print(f"[yellow]warning:[/yellow] {escape(warning)}")


@policy_app.command("list")
def policy_list() -> None:
    """Every rule of the site's policy, and its version."""
    with open_appliance() as appliance:
        try:
            snapshot = appliance.policy.current()
        except PolicyError as error:
            raise fail(str(error)) from None
        path = appliance.policy.path
    table = Table(title=f"{path} (version {snapshot.version[:12]})")
    for column in ("type", "subject", "department", "sensitivity", "action", "effect"):
        table.add_column(column, no_wrap=True)  # rule fields are copied whole into commands
    for rule in snapshot.chunk_rules:
        table.add_row("p", *rule.fields)
    for rule in snapshot.system_rules:
        principal, action, effect = rule.fields
        table.add_row("p2", principal, "", "", action, effect)
    for rule in snapshot.inheritance:
        table.add_row("g", rule.fields[0], "", "", f"inherits {rule.fields[1]}", "")
    console.print(table)


@policy_app.command("test")
def policy_test(
    user: Annotated[str, typer.Argument(help="A user id (see 'appliance users list').")],
    chunk: Annotated[
        str | None,
        typer.Argument(help="A chunk or document id; omit it for a system action."),
    ] = None,
    action: Annotated[str, typer.Option(help="read, cite, or a system action.")] = "read",
) -> None:
    """Explain the decision for USER on CHUNK: the deciding rule and every reason.
    Exit status 0 when allowed, 1 when denied."""
    if action not in CHUNK_ACTIONS + SYSTEM_ACTIONS:
        raise fail(f"unknown action {action!r}; use {', '.join(CHUNK_ACTIONS + SYSTEM_ACTIONS)}", 2)
    resource = None
    with open_appliance() as appliance:
        subject = known_subject(appliance, user)
        if action in SYSTEM_ACTIONS:
            decision = appliance.guard.decide_system(subject, action)
        else:
            if chunk is None:
                raise fail(f"{action} needs a chunk or document id", code=2)
            # An administrator's tool: it looks the chunk up directly to explain the decision.
            found = appliance.catalog.chunks([chunk]).get(chunk)
            if found is None:  # a document: its passages carry its labels, so one stands for all
                passages = sorted(appliance.catalog.chunk_ids_of(chunk))
                if not passages:
                    raise fail(f"no chunk or document {chunk!r}", code=2)
                found = appliance.catalog.chunks(passages[:1])[passages[0]]
                console.print(
                    f"document {escape(chunk)}: {len(passages)} passages, all with its labels",
                    highlight=False,
                )
            resource = Resource.of(found)
            decision = appliance.guard.decide(subject, resource, action)
    verdict = "[green]ALLOW[/green]" if decision.allowed else "[red]DENY[/red]"
    console.print(f"{verdict} {escape(user)} {action} {escape(chunk or '')}")
    if resource is not None:
        console.print(
            f"chunk labels: sensitivity={resource.sensitivity}, "
            f"departments={list(resource.departments)}, owner={resource.owner}, "
            f"patient={resource.patient_id or '-'}",
            highlight=False,
        )
    console.print(
        f"deciding rule: {', '.join(decision.rule) if decision.rule else 'none'}",
        highlight=False,
    )
    for reason in decision.reasons:
        console.print(f"  - {escape(reason)}", highlight=False)
    if not decision.allowed:
        raise typer.Exit(code=1)


@break_glass_app.command("start")
def break_glass_start(
    user: Annotated[str, typer.Argument(help="The clinician asking for emergency access.")],
    reason: Annotated[str, typer.Option(help="What emergency, why these records.")],
    patient: Annotated[str, typer.Option(help="The patient whose records are needed.")],
    minutes: Annotated[int, typer.Option(min=1, max=720)] = 60,
) -> None:
    """Open time-limited emergency access; the grant and every use are audited."""
    with open_appliance() as appliance:
        subject = known_subject(appliance, user)
        try:
            grant = appliance.guard.request_break_glass(
                subject, reason, dt.timedelta(minutes=minutes), patient
            )
        except (AccessDenied, BreakGlassError) as error:
            raise fail(str(error)) from None
    console.print(
        f"[bold red]BREAK-THE-GLASS ACTIVE[/bold red] for {escape(user)} until "
        f"{grant.expires_at:%Y-%m-%d %H:%M} UTC, records of patient {escape(patient)}; every "
        "document it opens is flagged and audited."
    )


@break_glass_app.command("end")
def break_glass_end(user: Annotated[str, typer.Argument()]) -> None:
    """End an active emergency access grant early."""
    with open_appliance() as appliance:
        subject = known_subject(appliance, user)
        ended = appliance.guard.end_break_glass(subject)
    if not ended:
        raise fail(f"{user} has no active break-the-glass grant")
    console.print(f"break-the-glass ended for {escape(user)}")
