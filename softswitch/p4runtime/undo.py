"""The undo log that keeps Write batches all-or-nothing.

Every change an update makes to the switch is followed at once by pushing its
inverse. A failed update undoes its own steps (so CONTINUE_ON_ERROR never leaves an
update half-applied); a failed ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC batch undoes the
whole batch. Undo steps restore state the same request just changed, so they do not
fail in practice; should one fail anyway, the remaining steps still run.
"""

from __future__ import annotations

from collections.abc import Callable

Step = Callable[[], None]


class UndoLog:
    """Inverse operations, run last-in first-out."""

    def __init__(self, atomic: bool = False) -> None:
        self._steps: list[Step] = []
        # True for a ROLLBACK_ON_ERROR batch: a change that could not be undone must
        # then be refused up front, since a later update may still fail.
        self.atomic = atomic

    def push(self, step: Step) -> None:
        self._steps.append(step)

    def mark(self) -> int:
        """A position to roll back to (the number of steps so far)."""
        return len(self._steps)

    def forget(self, to: int) -> None:
        """Drop the steps after ``to`` unrun: the changes they undo are final (an update
        of a CONTINUE_ON_ERROR batch succeeded), so the batch keeps no closures for it."""
        del self._steps[to:]

    def rollback(self, to: int = 0) -> list[Exception]:
        """Undo every step after ``to``; returns the exceptions of steps that failed."""
        failures: list[Exception] = []
        while len(self._steps) > to:
            step = self._steps.pop()
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - keep undoing the rest
                failures.append(exc)
        return failures
