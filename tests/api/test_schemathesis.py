"""Schemathesis against the live schema, in process (WSGI), signed in with a token.

For every operation in /api/schema/ it generates requests (valid and invalid ones) and checks
each answer: no 5xx, a documented status code and content type, and a body that matches the
schema. The examples per operation are bounded so the whole run stays well under a minute.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token

from cards import review as reviewing
from graders.attempts.submissions import submit
from quizsite.wsgi import application
from teams.models import Membership, Team
from tests.api.base import make_drill
from tests.cards.factories import make_cards, make_note, make_user

# Examples per operation: 20 keeps the run near 30 s on two cores; raise it to hunt for bugs.
MAX_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "20"))


@pytest.fixture
def in_test_transaction() -> Iterator[None]:
    """Keep the test's connection across WSGI calls, as Django's test Client does.

    Each request ends with ``close_old_connections``, which closes a connection whose autocommit
    differs from the settings: always the case inside the test's transaction (PostgreSQL then
    answers "the connection is closed" to the next query).
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def token(db: None, in_test_transaction: None) -> Iterator[str]:
    """A learner with a review, a submission and a team, so list endpoints have rows to serialise.

    Throttling is lifted for the run (it would only turn later examples into 429s).
    """
    user = make_user("fuzzer", time_zone="UTC")
    note = make_note(slug="pytorch-basics")
    cards = make_cards(3, note=note)
    reviewing.rate(user, reviewing.get_profile(user), reviewing.RatingRequest(cards[0].uuid, 4, 0), timezone.now())
    submit(user, make_drill(note), "def solution(x):\n    return x + 1\n")
    team = Team.objects.create(name="Fuzzers", slug="fuzzers", time_zone="UTC")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    rates = {"user": "100000/hour", "anon": "100000/hour"}
    throttles = {**django_settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    with override_settings(REST_FRAMEWORK=throttles, GRADER_RATE_LIMIT=100_000, GRADER_RUN_RATE_LIMIT=100_000):
        cache.clear()
        yield Token.objects.create(user=user).key
    cache.clear()


# Loaded from the app itself at collection (schemathesis' lazy `from_fixture` does not run on pytest 9:
# it writes Node._nodeid, which pytest 9 no longer has). Generating the schema touches no database.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.mark.slow
@schema.parametrize()
# derandomize: the same examples on every run, so the suite is never flaky (a longer hunt with
# API_FUZZ_EXAMPLES explores further); database=None: nothing is written to .hypothesis/.
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_it_answers_every_operation_within_its_schema(case: Any, token: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Token {token}"})
