"""A GET never writes: opening the drill page (a due drill, an old review to expire, no example outputs
yet), the hub, the review page, the stats and the dashboard changes no row count in any table and queues
nothing (no on-commit callback, no message published)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from cards.models import CardState, Profile
from graders.models import Drill, DrillExamples, DrillReview
from tests.conftest import published_tasks

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, int]:
    return {model._meta.db_table: model._base_manager.count() for model in apps.get_models()}


def test_the_pages_read_and_write_nothing(
    client_for: Client, learner: Any, drill: Drill, django_capture_on_commit_callbacks: Any
) -> None:
    now = timezone.now()
    Profile.objects.create(user=learner, time_zone="UTC")  # a signed-up learner has one
    # The drill card came due yesterday; the review open since before then is stale: the old page expired
    # it and opened a new one.
    CardState.objects.create(
        user=learner, card=drill.card, due=(now - timedelta(days=1)).date(), last_reviewed_at=now - timedelta(days=3)
    )
    DrillReview.objects.create(user=learner, drill=drill, seed=7, started_at=now - timedelta(days=3))
    pages = [
        reverse("graders:drill", args=[drill.slug]),
        reverse("graders:examples", args=[drill.slug]),
        reverse("graders:hub"),
        reverse("cards:review"),
        reverse("cards:stats"),
        reverse("cards:dashboard"),
    ]
    client_for.get(pages[0])  # the session's first request may touch its own row: count after it
    before = row_counts()
    with published_tasks() as sent, django_capture_on_commit_callbacks(execute=False) as callbacks:
        for url in pages:
            response = client_for.get(url)
            assert response.status_code == 200, url
    assert row_counts() == before
    assert DrillReview.objects.get().finished_at is None  # not expired by a GET
    assert not DrillExamples.objects.exists()
    assert (callbacks, sent) == ([], [])
    page = client_for.get(pages[0])
    # No review is current: the page shows an open one, no row behind it (the next POST opens it).
    assert not page.context["review"].opened and page.context["review"].is_open
    assert page.context["progress"].attempts == 0
