"""The examples' expected outputs: asked for once per drill version, computed by running the reference as a job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from graders.drills.local import LocalRunner
from graders.kinds.examples import EXAMPLES, OUTPUT_CHARS, example_outputs, format_value
from graders.models import Drill, DrillExamples
from jobs import lifecycle as jobs
from jobs.status import Status
from tests.graders.conftest import drill_text

pytestmark = pytest.mark.django_db


def run(row: DrillExamples) -> str:
    return jobs.process(EXAMPLES, row.pk, LocalRunner(), worker="test").status


def test_it_formats_a_tensor_with_its_shape_and_dtype() -> None:
    assert format_value(torch.tensor([2.0, 3.0])) == "tensor([2., 3.])\n# shape (2,), float32"
    assert format_value((1, "a")) == "(1, 'a')"
    assert len(format_value(list(range(1000)))) == OUTPUT_CHARS


def test_it_asks_a_worker_once_per_drill_version(drill: Drill, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = example_outputs(drill)
        again = example_outputs(drill)
    assert first == again and not first.is_final
    assert len(callbacks) == 1
    assert DrillExamples.objects.get().drill_version == drill.version


def test_it_stores_the_references_outputs_and_the_page_shows_them(drill: Drill, learner: User) -> None:
    row = example_outputs(drill)
    assert run(row) == Status.DONE
    assert run(row) == "final"  # computed once
    row.refresh_from_db()
    assert (row.status, row.outputs, row.error) == (
        Status.DONE,
        *([{"name": "small", "output": "tensor([2., 3.])\n# shape (2,), float32"}], ""),
    )
    client = Client()
    client.force_login(learner)
    page = client.get(reverse("graders:examples", args=[drill.slug])).content.decode()
    assert "tensor([2., 3.])" in page and "hx-trigger" not in page


def test_it_polls_while_the_outputs_are_being_computed(drill: Drill, learner: User) -> None:
    example_outputs(drill)  # as the import asks
    client = Client()
    client.force_login(learner)
    page = client.get(reverse("graders:drill", args=[drill.slug])).content.decode()
    assert "the grader is running the reference" in page
    url = reverse("graders:examples", args=[drill.slug])
    assert f'hx-get="{url}"' in page and f'hx-post="{url}"' not in page


def test_a_drill_without_outputs_asks_for_them_by_a_post_never_by_the_get(
    drill: Drill, learner: User, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(learner)
    url = reverse("graders:examples", args=[drill.slug])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        page = client.get(reverse("graders:drill", args=[drill.slug])).content.decode()
        fragment = client.get(url).content.decode()
    assert callbacks == [] and not DrillExamples.objects.exists()
    assert f'hx-post="{url}"' in page and "the grader is running the reference" in page
    assert f'hx-post="{url}"' in fragment
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        asked = client.post(url).content.decode()
        client.post(url)  # a second tab: the same row, no second job
    assert len(callbacks) == 1 and DrillExamples.objects.get().drill_version == drill.version
    assert f'hx-get="{url}"' in asked and f'hx-post="{url}"' not in asked


def test_it_records_why_a_broken_reference_has_no_outputs(
    make_drill: Callable[..., Drill], caplog: pytest.LogCaptureFixture
) -> None:
    """Ours: retried, and given up when it fails the same way again; why is in the log, under the reference the
    row names (a reference's error holds lines of the reference, which a learner must not read)."""
    broken = make_drill(drill_text().replace("return x + 1", "return x + undefined_name"))
    row = example_outputs(broken)
    with caplog.at_level("ERROR", logger="jobs.lifecycle"):
        assert [run(row) for _ in range(2)] == ["retry", Status.INTERNAL_ERROR]
    row.refresh_from_db()
    reference = row.error.split("(reference ")[1][:8]
    assert row.outputs is None and row.error == jobs.failure_message(reference) and row.is_final
    assert "the reference failed case small" in caplog.text and f"reference {reference}" in caplog.text
