"""Failure counters in the shared cache, and the login page that consults them.

Why a cache and not the database: a counter is written on every failed guess, and losing one (a Redis
restart) costs nothing but a fresh window. Every web process must see the same counts, so the cache is Redis
wherever REDIS_URL is set (``CACHES``); without it (tests, one-off commands) it is the process's memory.

A counter counts events in a fixed window that opens with its first event: ``add`` (set if absent) then
``incr``, both atomic in Redis and in the local-memory cache, so concurrent guesses cannot slip past the
limit the way a read-then-write would (the grading rate limit's race, issue 36). Its window's end is
kept beside it, so a refusal can say when to come back.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.utils.translation import ngettext


@dataclass(frozen=True)
class Counter:
    """``limit`` events per ``window`` seconds for one subject (an account, an address), by a hashed key."""

    scope: str
    subject: str
    limit: int
    window: int

    @property
    def key(self) -> str:
        digest = hashlib.sha256(self.subject.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"throttle:{self.scope}:{digest}"

    def hit(self, now: float | None = None) -> int:
        """Count one event; returns the count in the current window."""
        now = time.time() if now is None else now
        cache.add(f"{self.key}:ends", now + self.window, self.window)
        cache.add(self.key, 0, self.window)
        try:
            count = int(cache.incr(self.key))
        except ValueError:  # the window ended between the two calls: this event opens the next one
            cache.set(f"{self.key}:ends", now + self.window, self.window)
            cache.add(self.key, 1, self.window)
            return 1
        if count == 1:  # Redis's INCR recreates an expired key without a timeout: give it one
            cache.touch(self.key, self.window)
        return count

    def wait(self, now: float | None = None) -> int:
        """Seconds until the next event is allowed (0: allowed now)."""
        now = time.time() if now is None else now
        values = cache.get_many([self.key, f"{self.key}:ends"])
        if int(values.get(self.key) or 0) < self.limit:
            return 0
        return max(1, math.ceil(float(values.get(f"{self.key}:ends") or now + self.window) - now))

    def clear(self) -> None:
        cache.delete_many([self.key, f"{self.key}:ends"])


def client_address(request: HttpRequest) -> str:
    """The client's address as the site's edge saw it, an IPv6 one as its /64 (one host's whole network).

    Behind ``TRUSTED_PROXIES`` proxies that each append to X-Forwarded-For, the client is the entry that
    many places from the right; entries further left are the client's own word and are never read.
    """
    address = str(request.META.get("REMOTE_ADDR") or "")
    hops = settings.TRUSTED_PROXIES
    if hops:
        forwarded = [part.strip() for part in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")]
        if len(forwarded) >= hops and forwarded[-hops]:
            address = forwarded[-hops]
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def login_counters(request: HttpRequest, username: str) -> Sequence[Counter]:
    """Failed logins per account (whatever the address: a botnet's guesses) and per client address
    (whatever the account: one host trying many)."""
    window = settings.LOGIN_FAILURE_WINDOW
    return (
        Counter("login-account", username.strip().casefold(), settings.LOGIN_FAILURES_PER_ACCOUNT, window),
        Counter("login-address", client_address(request), settings.LOGIN_FAILURES_PER_ADDRESS, window),
    )


def wait_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return ngettext(
        "Too many failed logins for this account or from your network. Try again in %(minutes)d minute.",
        "Too many failed logins for this account or from your network. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}


class ThrottledLogin:
    """An authentication form's check, counted: over either limit the form fails without asking for the
    password to be checked (a guess made while blocked tells nothing, right or wrong); a failed check counts
    against the account and the address. A mixin for Django's own form and the admin's."""

    request: HttpRequest | None
    data: Any

    def clean(self) -> dict[str, Any]:
        if self.request is None:
            raise ImproperlyConfigured("a throttled login form needs the request")
        counters = login_counters(self.request, str(self.data.get("username", "")))
        wait = login_wait(counters)
        if wait:
            raise ValidationError(wait_message(wait), code="throttled")
        try:
            return super().clean()  # type: ignore[misc]
        except ValidationError:
            for counter in counters:
                counter.hit()
            raise


class ThrottledAuthenticationForm(ThrottledLogin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLogin, AdminAuthenticationForm):
    pass


def login_wait(counters: Sequence[Counter]) -> int:
    """Seconds until a login may be tried again (0: now)."""
    return max(counter.wait() for counter in counters)


class LoginView(auth_views.LoginView):
    """Django's login page with its failures counted (``ThrottledLogin``); a refusal answers 429."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: Form) -> HttpResponse:
        response = super().form_invalid(form)
        if any(error.code == "throttled" for error in form.non_field_errors().as_data()):
            response.status_code = 429
            response["Retry-After"] = str(login_wait(login_counters(self.request, form.data.get("username", ""))))
        return response
