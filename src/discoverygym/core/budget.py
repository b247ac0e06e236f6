"""Budget accounting: a limit and what has been spent against it."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ToolInputError


@dataclass
class Budget:
    """A spendable quantity (observations, cost units, submissions). `limit=None`
    means unlimited."""

    unit: str
    limit: float | None = None
    spent: float = 0.0

    @property
    def remaining(self) -> float | None:
        return None if self.limit is None else self.limit - self.spent

    def check(self, amount: float) -> None:
        """Raise ToolInputError, charging nothing, if `amount` would overrun the limit."""
        if self.limit is not None and self.spent + amount > self.limit + 1e-9:
            raise ToolInputError(
                f"This would use {amount:g} {self.unit} but only {self.remaining:g} of "
                f"{self.limit:g} remain. Nothing was charged."
            )

    def charge(self, amount: float) -> None:
        self.check(amount)
        self.spent += amount
