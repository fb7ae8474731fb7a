"""Signals other apps listen to; sent by the grader, never needed by it.

``verdict_recorded`` is sent once per final verdict, after the transaction that recorded it (and rated
the drill card) has committed: the teams app turns it into XP and board updates. The drill's own
rating is not a receiver: ``graders.grading_jobs`` calls it in the verdict's transaction.
"""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: submission_id, user_id, drill_id, kind, seed, status
verdict_recorded = Signal()
