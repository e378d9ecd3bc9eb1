"""Exceptions the facade raises, one class per documented FlowForge SQLSTATE.

The SQL API reports every refusal as ``RAISE ... USING ERRCODE = 'FFnnn'``.
Callers branch on the exception class (or ``.sqlstate``), never on message
text: messages are for people and may change, SQLSTATEs are the contract.
``db.map_error`` turns a psycopg error into one of these by SQLSTATE alone.
"""

from __future__ import annotations


class FlowForgeError(Exception):
    """Base of every error the facade raises on purpose.

    ``sqlstate`` is the five-character code when the error came from the
    database (or the code this class stands for when raised in Python);
    ``hint`` carries the server's HINT, which the SQL API uses to tell the
    caller what to do next.
    """

    code: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate or self.code
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} (hint: {self.hint})"
        return self.message


class NotFound(FlowForgeError):
    """FF001: the named workflow, run, task run or queue does not exist (for this tenant)."""

    code = "FF001"


class InvalidDefinition(FlowForgeError):
    """FF002: a workflow spec was refused (duplicate keys, unknown dependency, cycle, bad retry...)."""

    code = "FF002"


class InvalidArgument(FlowForgeError):
    """FF003: an argument is out of range or malformed (also raised in Python for bad CLI input)."""

    code = "FF003"


class LeaseLost(FlowForgeError):
    """FF004: the caller's fencing token is stale — its lease expired, was reaped or the task was cancelled.

    A worker that gets this must drop the task without retrying the write:
    someone else owns it now.
    """

    code = "FF004"


class IllegalTransition(FlowForgeError):
    """FF005: the requested state change is not allowed from the row's current state."""

    code = "FF005"


class IdempotencyConflict(FlowForgeError):
    """FF006: an idempotency key was reused with different arguments."""

    code = "FF006"


class PermissionDenied(FlowForgeError):
    """FF007: the caller may not do this (including any cross-tenant access)."""

    code = "FF007"


class NotAuthenticated(FlowForgeError):
    """FF008: no valid tenant identity (unknown or revoked API key, role without membership)."""

    code = "FF008"


class PayloadTooLarge(FlowForgeError):
    """FF009: an input, output or message payload exceeds its documented limit."""

    code = "FF009"


class SchemaVersionMismatch(FlowForgeError):
    """FF010: the database schema is not the version this code expects — run `flowforge migrate`."""

    code = "FF010"


class EventRefused(FlowForgeError):
    """FF012: a state machine refused an event (ended, no transition, no guard held); nothing was written."""

    code = "FF012"


class Deleted(FlowForgeError):
    """FF013: the workflow or run was soft-deleted (it starts no run, cannot be retried, is not deleted twice)."""

    code = "FF013"


class DatabaseUnavailable(FlowForgeError):
    """The database could not be reached, refused the connection, or dropped it.

    Not an FF code: it is about the path to the server, not about a request.
    Raised for connection failures and SQLSTATE class 08 / admin shutdown.
    """


class DatabaseError(FlowForgeError):
    """A database error with a SQLSTATE that is not one of FlowForge's own.

    Kept distinct so that an unexpected server error is never mistaken for a
    documented refusal; ``sqlstate`` still says exactly what happened.
    """


class BrokerUnavailable(FlowForgeError):
    """The AMQP broker named by FLOWFORGE_AMQP_URL could not be reached."""


BY_SQLSTATE: dict[str, type[FlowForgeError]] = {
    cls.code: cls
    for cls in (
        NotFound,
        InvalidDefinition,
        InvalidArgument,
        LeaseLost,
        IllegalTransition,
        IdempotencyConflict,
        PermissionDenied,
        NotAuthenticated,
        PayloadTooLarge,
        SchemaVersionMismatch,
        EventRefused,
        Deleted,
    )
}
"""SQLSTATE -> exception class for FlowForge's own codes."""
