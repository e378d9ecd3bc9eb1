"""``flowforge org create SLUG NAME`` and ``flowforge org onboard ORG LOGIN``: the operator's tenant set-up.

Both are the operator's (a superuser, or a CREATEROLE login in
``flowforge_owner``): ``onboard`` sets role defaults with ALTER ROLE, which
FlowForge's own roles may never do (docs/security.md, "Onboarding a tenant").
"""

from __future__ import annotations

import click

from .. import errors
from ..config import Settings
from ._common import cli_hint, cli_hint_by_sqlstate, client, emit_json

INSUFFICIENT_PRIVILEGE = "42501"
MEMBERSHIP_ROLES = ("viewer", "member", "admin", "owner")
OPERATOR_HINT = "run it as the operator: a superuser, or a CREATEROLE login that is a member of flowforge_owner (--dsn)"


@click.group("org")
def org() -> None:
    """Organizations (tenants) and the logins that act for them."""


@org.command("create")
@click.argument("slug")
@click.argument("name")
@click.pass_obj
def create(settings: Settings, slug: str, name: str) -> None:
    """Create organization SLUG (e.g. acme) with display NAME; prints its id."""
    with client(settings) as api, cli_hint(errors.PermissionDenied, OPERATOR_HINT):
        org_id = api.create_organization(slug, name)
    if settings.json:
        emit_json({"id": org_id, "slug": slug, "name": name})
    else:
        click.echo(f"organization {slug} created (id {org_id})")


@org.command("onboard")
@click.argument("organization", metavar="ORG")
@click.argument("login")
@click.option("--role", type=click.Choice(MEMBERSHIP_ROLES), default="member", show_default=True,
              help="The login's rights in ORG: viewer reads, member runs workflows, admin manages keys and members.")
@click.option("--statement-timeout", default="30s", show_default=True, metavar="DURATION",
              help="Longest statement of the login's sessions (PostgreSQL units: ms, s, min, h).")
@click.option("--lock-timeout", default="5s", show_default=True, metavar="DURATION",
              help="Longest wait for a lock.")
@click.option("--idle-in-transaction-timeout", default="60s", show_default=True, metavar="DURATION",
              help="Longest a session may sit idle inside a transaction (and hold its snapshot and locks).")
@click.pass_obj
def onboard(settings: Settings, organization: str, login: str, role: str, statement_timeout: str,
            lock_timeout: str, idle_in_transaction_timeout: str) -> None:
    """Map LOGIN (an existing login role) to ORG and give it statement, lock and idle timeouts.

    Runs flowforge.onboard_login: add_member, then ALTER ROLE LOGIN SET the
    three timeouts, which new sessions of the login get. Running it again
    changes the role and the timeouts.
    """
    # EXECUTE on onboard_login is the operator's alone (42501 for anyone else); FF007: no ALTER ROLE right.
    with client(settings) as api, cli_hint(errors.PermissionDenied, OPERATOR_HINT), \
            cli_hint_by_sqlstate(INSUFFICIENT_PRIVILEGE, OPERATOR_HINT), \
            cli_hint(errors.NotFound, "create it first with `flowforge org create SLUG NAME`"):
        api.onboard_login(organization, login, role, statement_timeout=statement_timeout, lock_timeout=lock_timeout,
                          idle_in_transaction_timeout=idle_in_transaction_timeout)
    timeouts = {"statement_timeout": statement_timeout, "lock_timeout": lock_timeout,
                "idle_in_transaction_session_timeout": idle_in_transaction_timeout}
    if settings.json:
        emit_json({"organization": organization, "login": login, "role": role, **timeouts})
    else:
        click.echo(f"{login} is a {role} of {organization}; its new sessions get "
                   + ", ".join(f"{k}={v}" for k, v in timeouts.items()))
