"""Per-user (and, before login, per-address) request rates.

DRF's own throttles copy ``DEFAULT_THROTTLE_RATES`` into a class attribute at import time, so
``override_settings`` in a test (or a changed setting) would never reach them; these read the
rates on every request. The counters live in Django's default cache (per process with the
default local-memory cache: set a shared cache to make the limits global across processes).
"""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _LiveRates:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UserThrottle(_LiveRates, UserRateThrottle):
    """Every request of a signed-in user (scope ``user``); anonymous requests count per address."""

    scope = "user"


class AnonThrottle(_LiveRates, AnonRateThrottle):
    """Requests without credentials, such as the token endpoint (scope ``anon``): slows password guessing."""

    scope = "anon"
