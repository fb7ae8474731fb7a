"""Two learners join a team through its invite link, review on the review page, and the board ranks them.

The whole live path runs for real: each rating marks its learner day in its own transaction; a real
``celery -A quizsite worker -B`` (sharing the test database, on a real Redis) runs beat's tick every
second, recomputes the rollup of each marked day and writes the Redis boards; the board page reads them back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from teams import boards, services
from teams.models import DailyActivity, Membership
from tests.cards.factories import make_cards, make_user
from tests.conftest import Workers

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

# The worker writes the boards under this prefix in the test Redis; only these keys are deleted after.
BOARD_PREFIX = f"test-teams-board-{uuid.uuid4().hex[:12]}:"


@pytest.fixture(scope="module")
def refresh_worker(
    shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    """One worker on the ``celery`` queue running beat too, with the boards of this module in the test Redis."""
    logs = tmp_path_factory.mktemp("teams-worker")
    pool = Workers(
        shared_database,
        celery_on_redis,
        logs,
        queues="celery",
        extra_env={"TEAMS_BOARD_PREFIX": BOARD_PREFIX},
        extra_args=("-B", "--schedule", str(logs / "beat-schedule")),
    )
    conn = redis.Redis.from_url(celery_on_redis)
    try:
        pool.start(concurrency=1)
        yield pool
    finally:
        pool.stop_all()
        keys = list(conn.scan_iter(match=f"{BOARD_PREFIX}*", count=1000))
        if keys:
            conn.delete(*keys)
        conn.close()


@pytest.fixture(scope="module")
def site(shared_database: str) -> Iterator[str]:
    """A live server on the shared database file, started after the switch to it, so each request
    thread opens its own connection, as in production (pytest-django's session ``live_server``
    shares one in-memory connection between all its threads)."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer("localhost")
    try:
        yield server.url
    finally:
        server.stop()


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def logged_in_page(browser: Any, base: str, user: AbstractBaseUser) -> Any:
    """A browser tab with the user's session cookie (no password hashing, no login page)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def join_and_review(browser: Any, base: str, user: AbstractBaseUser, invite: str, goods: int) -> None:
    from playwright.sync_api import expect

    page = logged_in_page(browser, base, user)
    page.goto(invite)
    page.get_by_role("button", name="Join team").click()
    expect(page.locator("h1")).to_have_text("Lab Rats")
    page.goto(f"{base}/review/")
    for done in range(1, goods + 1):
        page.keyboard.press("Space")
        page.keyboard.press("3")  # Good: SM-2 quality 4, one XP
        expect(page.locator("#count-reviewed")).to_have_text(str(done))
    page.context.close()


def test_it_ranks_two_learners_who_joined_by_invite_and_reviewed(
    browser: Any, refresh_worker: Workers, site: str, settings: Any
) -> None:
    from playwright.sync_api import expect

    # This process (the live server) reads the boards the worker writes.
    settings.REDIS_URL, settings.TEAMS_BOARD_PREFIX = refresh_worker.env["REDIS_URL"], BOARD_PREFIX
    make_cards(5)
    owner, ada, bo = (
        make_user("owner", time_zone="UTC"),
        make_user("ada", time_zone="UTC"),
        make_user("bo", time_zone="UTC"),
    )
    team = services.create_team(owner, "Lab Rats", "UTC")
    invite = site + f"/teams/join/{services.invite_token(team)}/"

    join_and_review(browser, site, ada, invite, goods=1)
    join_and_review(browser, site, bo, invite, goods=3)
    assert set(Membership.objects.filter(team=team).values_list("user__username", flat=True)) == {"owner", "ada", "bo"}

    def refreshed() -> bool:
        return dict(DailyActivity.objects.values_list("user__username", "xp")) == {"ada": 1, "bo": 3}

    wait_for(refreshed, 30, f"the worker's refresh (log: {refresh_worker.started[0].log})")
    week = boards.team_season(team, datetime.now(tz=UTC)).isoformat()
    conn = boards.client()
    assert conn is not None
    key = f"{BOARD_PREFIX}z:team:{team.pk}:week:{week}"

    def ranked() -> list[int]:
        return [int(member) for member in conn.zrange(key, 0, -1, desc=True)]

    # The board is written by the worker after each review's rollup commits, so it may trail the
    # database for a moment: wait for it to settle, and show the scores if it never does.
    try:
        wait_for(lambda: ranked()[:2] == [bo.pk, ada.pk], 15, f"bo ({bo.pk}) above ada ({ada.pk}) on the board")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; scores now {conn.zrange(key, 0, -1, withscores=True)}") from None

    page = logged_in_page(browser, site, ada)
    page.goto(f"{site}/teams/{team.slug}/board/?period=week")
    rows = page.locator("tr.board-row")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-user") for i in range(3)] == ["bo", "ada", "owner"]
    expect(rows.nth(0).locator("td").nth(1)).to_have_text("3")
    expect(page.locator("tr.you")).to_contain_text("ada (you)")
    page.context.close()
