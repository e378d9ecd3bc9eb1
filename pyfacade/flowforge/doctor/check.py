"""One health check's result, and the four statuses ``flowforge doctor`` prints."""

from __future__ import annotations

from dataclasses import asdict, dataclass

OK, WARN, SKIP, PROBLEM = "ok", "warn", "skip", "problem"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def listed(items: list[str], most: int = 8) -> str:
    """``a, b, c`` — at most ``most`` of them, then ``and N more`` (a detail stays one readable line)."""
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")
