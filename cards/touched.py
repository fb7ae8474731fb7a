"""Mark a learner day as changed, in the transaction of the fact that changed it.

The one way facts reach the team rollup and boards: a rating, an undo, an accepted verdict or an
output-card answer calls ``touch`` inside its own transaction, and ``teams.tasks.refresh_touched_days``
(beat, every second) recomputes each marked day. A fact that rolls back marks nothing; a marked day
survives any process dying, because the mark is a row, not a message or a thread's memory.
"""

from __future__ import annotations

from datetime import date

from cards.models import TouchedDay


def touch(user_id: int, day: date) -> None:
    """One INSERT ... ON CONFLICT (user, day) DO UPDATE: a day already waiting keeps its one row.

    Why DO UPDATE (of nothing: ``day`` to itself) and not DO NOTHING: the update locks the waiting row
    until this fact commits, so a claim of that row (``teams.services.claim``) waits for the fact and its
    recompute sees it. With DO NOTHING a claim could take the row between this insert and the fact's
    commit, recompute without the fact, and leave no row behind for it.
    """
    TouchedDay.objects.bulk_create(
        [TouchedDay(user_id=user_id, day=day)],
        update_conflicts=True,
        unique_fields=["user", "day"],
        update_fields=["day"],
    )
