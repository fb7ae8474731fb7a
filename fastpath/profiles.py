"""A learner's profile by user, compiled once: read by every accepted drill verdict (the day its XP lands on).

The A/B that keeps it: docs/performance.md, "Under the ORM" (the queryset against ``Prepared``).
"""

from __future__ import annotations

from cards.models import Profile
from fastpath.prepared import Prepared

BY_USER: Prepared[Profile] = Prepared(lambda user_id: Profile.objects.filter(user_id=user_id)[:1])
