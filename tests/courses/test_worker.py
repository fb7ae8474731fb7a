"""A team's output cards are verified the way the bundled ones are: the confirmation queues their runs, a real
Celery worker (on Redis, with the test database) runs them in its sandbox, and only then do they enter
review, with what the sandbox printed. Nothing of that runs in the web process."""

from __future__ import annotations

import os
import time

import pytest
from django.test import Client
from django.urls import reverse

from cards.models import Card
from courses.models import Upload
from outputs.models import SnippetRun
from teams import services as team_services
from tests.cards.factories import make_user
from tests.courses.base import AUTOGRAD

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.sandbox,
    pytest.mark.xdist_group("celery-redis"),
]


def test_a_worker_verifies_a_team_courses_output_card_before_it_enters_review(
    workers: object, transactional_db: None
) -> None:
    from tests.graders.conftest import Workers

    assert isinstance(workers, Workers)
    workers.current  # noqa: B018 - starts one when none is running
    owner, member = make_user("olivia", time_zone="UTC"), make_user("max", time_zone="UTC")
    team = team_services.create_team(owner, "Tensor Tamers", "UTC")
    team_services.join(team, member)
    web = Client()
    web.force_login(owner)
    web.post(reverse("courses:upload", args=[team.slug]), {"paste_name": "autograd.md", "paste_text": AUTOGRAD})
    upload = Upload.objects.get()
    web.post(reverse("courses:confirm", args=[team.slug, upload.uuid]))
    card = Card.objects.get(kind=Card.Kind.OUTPUT)
    assert not card.active  # out of review until the worker ran it
    deadline = time.monotonic() + 90
    while not Card.objects.filter(pk=card.pk, active=True).exists():
        assert time.monotonic() < deadline, f"never verified: {list(SnippetRun.objects.values('status', 'error'))}"
        time.sleep(0.1)
    card.refresh_from_db()
    assert card.back == "```text\ntensor([3., 6.])\n```"  # what the sandbox printed
    run = SnippetRun.objects.get(card=card)
    assert run.claim_token and f":{os.getpid()}:" not in run.claim_token  # claimed by the worker, not by us
    assert Card.objects.visible_to(member).filter(pk=card.pk).exists()
    assert not Card.objects.visible_to(make_user("oscar")).filter(pk=card.pk).exists()
