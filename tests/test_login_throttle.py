"""The web login counts failed attempts per account and per client address (quizsite.throttle): past either
limit every attempt is refused with 429, right password or not, until the window ends (issue 36: unlimited
password guesses on the web login)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.contrib.auth.models import User
from django.core.cache import cache, caches
from django.test import Client, RequestFactory, TestCase, override_settings
from django.urls import reverse

from quizsite.throttle import Counter, client_address

FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@override_settings(
    PASSWORD_HASHERS=FAST_HASHER, LOGIN_FAILURES_PER_ACCOUNT=3, LOGIN_FAILURES_PER_ADDRESS=5, LOGIN_FAILURE_WINDOW=60
)
class LoginThrottleTests(TestCase):
    def setUp(self) -> None:
        cache.clear()
        self.alice = User.objects.create_user("alice", password="right-horse-battery")
        self.bob = User.objects.create_user("bob", password="staple-correct-horse")

    def login(self, username: str, password: str, address: str = "203.0.113.7") -> object:
        return Client(REMOTE_ADDR=address).post(reverse("login"), {"username": username, "password": password})

    def test_it_lets_a_learner_in_after_a_few_typos(self) -> None:
        for _ in range(2):
            assert self.login("alice", "wrong").status_code == 200
        response = self.login("alice", "right-horse-battery")
        assert response.status_code == 302

    def test_it_refuses_even_the_right_password_once_an_account_took_too_many_guesses(self) -> None:
        for address in ("203.0.113.1", "198.51.100.2", "192.0.2.3"):  # a botnet: one guess per address
            assert self.login("alice", "guess", address).status_code == 200
        response = self.login("alice", "right-horse-battery", "203.0.113.99")
        assert response.status_code == 429
        assert 0 < int(response["Retry-After"]) <= 60
        self.assertContains(response, "Too many failed logins", status_code=429)
        self.assertContains(response, "Try again in 1 minute.", status_code=429)
        assert "_auth_user_id" not in response.wsgi_request.session
        assert self.login("bob", "staple-correct-horse", "203.0.113.99").status_code == 302  # others unaffected

    def test_it_counts_the_account_whatever_the_case_of_its_name(self) -> None:
        for name in ("alice", "Alice", " ALICE"):
            self.login(name, "guess", "203.0.113.1")
        assert self.login("alice", "right-horse-battery", "198.51.100.2").status_code == 429

    def test_it_refuses_an_address_that_tried_too_many_accounts(self) -> None:
        for index in range(5):
            assert self.login(f"user{index}", "guess").status_code == 200
        assert self.login("bob", "staple-correct-horse").status_code == 429
        assert self.login("bob", "staple-correct-horse", "198.51.100.2").status_code == 302

    def test_it_counts_a_guess_made_from_a_signed_in_session(self) -> None:
        client = Client(REMOTE_ADDR="203.0.113.7")
        client.force_login(self.bob)
        for _ in range(3):
            client.post(reverse("login"), {"username": "alice", "password": "guess"})
        assert self.login("alice", "right-horse-battery", "198.51.100.2").status_code == 429

    def test_it_throttles_the_admins_login_the_same_way(self) -> None:
        User.objects.filter(pk=self.alice.pk).update(is_staff=True, is_superuser=True)
        client = Client(REMOTE_ADDR="203.0.113.7")
        for _ in range(3):
            client.post(reverse("admin:login"), {"username": "alice", "password": "guess"})
        response = client.post(reverse("admin:login"), {"username": "alice", "password": "right-horse-battery"})
        self.assertContains(response, "Too many failed logins")
        assert "_auth_user_id" not in client.session

    @override_settings(LOGIN_FAILURE_WINDOW=1)
    def test_it_lets_the_account_in_again_when_the_window_ends(self) -> None:
        for _ in range(3):
            self.login("alice", "guess")
        assert self.login("alice", "right-horse-battery").status_code == 429
        time.sleep(1.1)
        assert self.login("alice", "right-horse-battery").status_code == 302


class ClientAddressTests(TestCase):
    def address(self, remote: str, forwarded: str | None = None) -> str:
        extra = {"REMOTE_ADDR": remote} | ({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})
        return client_address(RequestFactory().post("/accounts/login/", **extra))

    def test_it_ignores_x_forwarded_for_without_trusted_proxies(self) -> None:
        assert self.address("203.0.113.7", "198.51.100.1") == "203.0.113.7"

    @override_settings(TRUSTED_PROXIES=1)
    def test_it_reads_the_entry_the_proxy_appended_and_never_the_clients_own(self) -> None:
        assert self.address("10.0.0.2", "6.6.6.6, 198.51.100.1") == "198.51.100.1"
        assert self.address("10.0.0.2") == "10.0.0.2"

    def test_it_counts_an_ipv6_host_by_its_64_network(self) -> None:
        assert self.address("2001:db8:1:2:aaaa::1") == self.address("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
        assert self.address("::ffff:203.0.113.7") == "203.0.113.7"


# ------------------------------------------------------------------------------ on Redis, as deployed


@pytest.fixture
def redis_cache() -> Iterator[str]:
    """The cache as `make run` and production configure it: Redis, under a key prefix of this test's own."""
    import os

    url = os.getenv("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    conn = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        conn.ping()
    except redis.RedisError as exc:
        pytest.skip(f"needs Redis at {url} ({exc})")
    prefix = f"test-throttle-{uuid.uuid4().hex[:8]}"
    backend = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": prefix}
    try:
        with override_settings(CACHES={"default": backend}):
            yield prefix
    finally:
        caches["default"].close()
        keys = list(conn.scan_iter(match=f"{prefix}*"))
        if keys:
            conn.delete(*keys)
        conn.close()


def test_it_counts_every_concurrent_failure_exactly_once_on_redis(redis_cache: str) -> None:
    counter = Counter("test", "alice", limit=30, window=60)
    with ThreadPoolExecutor(16) as pool:
        counts = sorted(pool.map(lambda _: counter.hit(), range(40)))
    assert counts == list(range(1, 41))
    assert 55 <= counter.wait() <= 60


def test_it_gives_every_counter_an_expiry_on_redis(redis_cache: str) -> None:
    counter = Counter("test", "bob", limit=1, window=60)
    counter.hit()
    conn = redis.Redis.from_url(caches["default"]._servers[0])  # type: ignore[attr-defined]
    keys = list(conn.scan_iter(match=f"{redis_cache}*"))
    assert len(keys) == 2 and all(0 < conn.ttl(key) <= 60 for key in keys)
