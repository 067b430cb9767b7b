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
from appliance.cli.common import console, fail, known_subject, open_appliance

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
def policy_add(rule: RuleArgument, actor: ActorOption = "") -> None:
    """Add a rule; running services apply it on their next request."""
    _edit(_rule(rule), actor, adding=True)


@policy_app.command("remove")
def policy_remove(rule: RuleArgument, actor: ActorOption = "") -> None:
    """Remove a rule; running services apply it on their next request."""
    _edit(_rule(rule), actor, adding=False)


def _edit(rule: Rule, actor: str, *, adding: bool) -> None:
    with open_appliance() as appliance:
        change = appliance.policy.add if adding else appliance.policy.remove
        try:
            change(rule, actor or getpass.getuser())
        except PolicyError as error:
            raise fail(str(error)) from None
    console.print(f"{'added' if adding else 'removed'}: {escape(rule.line())}")


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


@policy_app.command("users")
def policy_users() -> None:
    """The local users the CLI knows, with their roles, departments and care teams."""
    with open_appliance() as appliance:
        try:
            subjects = appliance.subjects.subjects()
        except ValueError as error:
            raise fail(str(error)) from None
        path = appliance.subjects.path
    table = Table(title=str(path))
    for column in ("user", "roles", "departments", "care team"):
        table.add_column(column)
    for subject in subjects.values():
        table.add_row(
            subject.user_id,
            ", ".join(subject.roles),
            ", ".join(subject.departments),
            ", ".join(subject.care_team),
        )
    console.print(table)


@policy_app.command("test")
def policy_test(
    user: Annotated[str, typer.Argument(help="A user id (see 'appliance policy users').")],
    chunk: Annotated[
        str | None, typer.Argument(help="A chunk id; omit it for a system action.")
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
                raise fail(f"{action} needs a chunk id", code=2)
            # An administrator's tool: it looks the chunk up directly to explain the decision.
            found = appliance.catalog.chunks([chunk]).get(chunk)
            if found is None:
                raise fail(f"no chunk {chunk!r}", code=2)
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
