"""A learner's state of one card, compiled once: read on every drill submission and accepted verdict.

The A/B that keeps it: docs/performance.md, "Under the ORM" (bench/prepared.py, "the card's state").
"""

from __future__ import annotations

from cards.models import CardState
from fastpath.prepared import Prepared

OF_CARD: Prepared[CardState] = Prepared(
    lambda user_id, card_id: CardState.objects.filter(user_id=user_id, card_id=card_id)
)
