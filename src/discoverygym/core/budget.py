"""Budgets: every quantity an episode counts (observations, cost units, submissions,
solve time) is one `Budget` with a kind, a limit and what was spent.

The budget is the quantity's only counter. The record's usage totals
(`usage.observations`, `usage.cost`, `usage.submissions`) are read from the budgets of
those kinds, and `usage.budget` lists every budget as `{kind, limit, spent}` (see
`Budget.as_record`), so a reader learns a limit from the record, never from a
protocol's name. `read_budgets` reads that list back from a record anyone may have
written."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .errors import ToolInputError

#: The kinds the built-in suites count, and how a message to the agent names the unit.
#: A suite may count another kind; its unit is then its name.
UNITS = {
    "observations": "observations",
    "cost": "cost units",
    "submissions": "submissions",
    "solve_s": "seconds of solve time",
}
#: Kinds whose total is also the record's `usage.<kind>` (the totals every reader knows).
USAGE_TOTALS = ("observations", "cost", "submissions")
#: What `read_budgets` keeps of a record's list: at most this many budgets, kinds cut
#: to this many characters.
MAX_BUDGETS_READ = 16
MAX_KIND_CHARS = 40


@dataclass
class Budget:
    """A counted quantity: `kind` (what is counted), `limit` (None: no limit, only a
    count) and `spent` (the total over the episode). A limit that `renewals` is not None
    for is granted afresh by `renew()` (mad: each measurement run has its own budget);
    `spent` still totals every grant, and the limit applies to each grant alone."""

    kind: str
    limit: float | None = None
    spent: float = 0
    renewals: int | None = None
    # what this grant has spent, summed on its own (not spent minus the earlier grants,
    # whose rounding would move `remaining` by an ulp from a fresh budget's)
    _spent_in_grant: float = field(default=0, init=False, repr=False, compare=False)

    @property
    def unit(self) -> str:
        return UNITS.get(self.kind, self.kind)

    def __post_init__(self) -> None:
        self._spent_in_grant = self.spent

    @property
    def spent_in_grant(self) -> float:
        """What was spent since the limit was last granted (all of it if never renewed)."""
        return self._spent_in_grant

    @property
    def remaining(self) -> float | None:
        return None if self.limit is None else self.limit - self.spent_in_grant

    def check(self, amount: float) -> None:
        """Raise ToolInputError, charging nothing, if `amount` would overrun the limit."""
        if self.limit is not None and self.spent_in_grant + amount > self.limit + 1e-9:
            raise ToolInputError(
                f"This would use {amount:g} {self.unit} but only {self.remaining:g} of "
                f"{self.limit:g} remain. Nothing was charged.")

    def charge(self, amount: float) -> None:
        """Spend `amount` (refused, charging nothing, past the limit)."""
        self.check(amount)
        self.spent += amount
        self._spent_in_grant += amount

    def elapse(self, amount: float) -> None:
        """Spend `amount` whatever the limit: a clock's time passes, it is not asked for
        (the packages suite's solve time; the clock's owner refuses work once it is
        spent)."""
        self.spent += amount
        self._spent_in_grant += amount

    def renew(self) -> None:
        """Grant the limit afresh (only for a budget made with `renewals=0`)."""
        if self.renewals is None:
            raise ValueError(f"the {self.kind} budget does not renew")
        self.renewals += 1
        self._spent_in_grant = 0

    def as_record(self) -> dict[str, Any]:
        """`{kind, limit, spent}`, and `renewals` for a limit that renews."""
        out: dict[str, Any] = {"kind": self.kind, "limit": self.limit, "spent": self.spent}
        if self.renewals is not None:
            out["renewals"] = self.renewals
        return out


def is_clock(kind: str) -> bool:
    """Whether a budget of `kind` is run down by a clock (a kind in seconds, `*_s`): its
    spent moves while any call runs, so comparing two plays or two moments leaves it
    out."""
    return kind.endswith("_s")


def without_clocks(budgets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Budget records (`as_record`) with a clock's `spent` left out: what two plays of
    the same calls, or the moments before and after a free call, have alike."""
    return [{k: v for k, v in b.items() if not (k == "spent" and is_clock(str(b.get("kind"))))}
            for b in budgets]


def read_budgets(usage: Any) -> list[dict[str, Any]]:
    """The budgets of a record's `usage` as `{kind, limit, spent}` (plus `renewals`),
    from a record anyone may have written: a usage without `budget` (a record older than
    budgets) reads as none, and so does one whose `budget` is not a list; an entry that
    is not an object with a string kind and a finite spent is left out; a limit that is
    not a finite number reads as None (no limit); at most MAX_BUDGETS_READ entries."""
    entries = usage.get("budget") if isinstance(usage, dict) else None
    if not isinstance(entries, list):
        return []
    out = []
    for entry in entries[:MAX_BUDGETS_READ]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
            continue
        spent = _finite(entry.get("spent"))
        if spent is None:
            continue
        read: dict[str, Any] = {"kind": entry["kind"][:MAX_KIND_CHARS],
                                "limit": _finite(entry.get("limit")), "spent": spent}
        renewals = _finite(entry.get("renewals"))
        if renewals is not None:
            read["renewals"] = int(renewals)
        out.append(read)
    return out


def _finite(value: Any) -> float | None:
    """A JSON number that a float holds and is finite, else None (bools, strings, 10**400,
    NaN and infinity are not amounts)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
