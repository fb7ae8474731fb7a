"""``outputs.verify``: output cards enter review only with a qualifying sandbox run, whoever finishes it.

Runs are stored directly here (no sandbox) except in the last test, where a real Celery worker runs
them, as ``make run``'s worker does after the import queued them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.utils import timezone

from cards.importing import NoteSource, import_notes
from cards.models import Card, Note
from jobs import lifecycle as jobs
from jobs.lifecycle import Finished
from jobs.status import Status
from outputs import runs, verify
from outputs.models import OutputCheck, SnippetRun

NOTE = """\
# Fixture

## Double

```python
x = torch.tensor([1, 2])
x * 2
```

```
tensor([2, 4])
```
"""


def import_note(text: str = NOTE) -> Card:
    import_notes(
        [NoteSource(path=Path("notes/fixture.md"), display_path="notes/fixture.md", slug="fixture", text=text)]
    )
    return Card.objects.get(kind=Card.Kind.OUTPUT)


def finish(run: SnippetRun, outcome: str, output: str, error: str = "") -> None:
    """A worker's claim and finish (``jobs.lifecycle``), with a result given here instead of the sandbox's."""
    claimed = jobs.claim(runs.SNIPPETS, run.pk, timezone.now())
    assert claimed.job is not None
    fields = {"outcome": outcome, "output": output, "error": error}
    assert jobs.finish(runs.SNIPPETS, claimed.job, claimed.token, Finished(Status.DONE, fields))


@pytest.mark.django_db
def test_it_imports_an_output_card_out_of_review_and_asks_for_its_run() -> None:
    card = import_note()
    assert not card.active
    run = SnippetRun.objects.get(card=card)
    assert run.status == Status.QUEUED
    check = OutputCheck.objects.get(card=card)
    assert (check.in_note, check.state, check.note_output) == (True, "pending", "tensor([2, 4])")


@pytest.mark.django_db
def test_a_finished_run_brings_the_card_in_with_what_the_sandbox_printed() -> None:
    card = import_note()
    finish(SnippetRun.objects.get(card=card), "ok", "tensor([2, 4])")
    card.refresh_from_db()
    assert card.active
    assert card.back == "```text\ntensor([2, 4])\n```" and "tensor([2, 4])" in card.back_html
    assert OutputCheck.objects.get(card=card).state == "verified"


@pytest.mark.django_db
def test_a_run_that_does_not_qualify_keeps_the_card_out_and_says_why() -> None:
    card = import_note()
    finish(SnippetRun.objects.get(card=card), "random", "tensor([0.3])")
    card.refresh_from_db()
    assert not card.active
    check = OutputCheck.objects.get(card=card)
    assert (check.state, check.problem) == ("excluded", "random")


@pytest.mark.django_db
def test_a_run_of_older_code_changes_nothing() -> None:
    card = import_note()
    old = SnippetRun.objects.get(card=card)
    card = import_note(NOTE.replace("x * 2", "x * 3"))
    finish(old, "ok", "tensor([2, 4])")
    card.refresh_from_db()
    assert not card.active


@pytest.mark.django_db
def test_a_run_that_finishes_after_its_section_was_removed_does_not_bring_the_card_back() -> None:
    card = import_note()
    run = SnippetRun.objects.get(card=card)
    import_note("# Fixture\n\n## Other\n\n**要点**在这里，别的内容。\n")
    finish(run, "ok", "tensor([2, 4])")
    card.refresh_from_db()
    assert not card.active
    assert not OutputCheck.objects.get(card=card).in_note


@pytest.mark.django_db
def test_a_cached_run_applies_on_import_without_the_sandbox() -> None:
    card = import_note()
    finish(SnippetRun.objects.get(card=card), "ok", "tensor([2, 4])")
    import_note(NOTE + "\n## More\n\n更多的**内容**在这里。\n")  # the note changed, this card did not
    card.refresh_from_db()
    assert card.active
    renamed = NOTE.replace("## Double", "## Twice")  # the same card under a renamed heading, its code unchanged
    import_notes(
        [NoteSource(path=Path("notes/fixture.md"), display_path="notes/fixture.md", slug="fixture", text=renamed)]
    )
    twice = Card.objects.get(kind=Card.Kind.OUTPUT, heading_path="Twice")
    assert twice.pk == card.pk
    assert twice.active  # its cached run still applies: no new run
    assert SnippetRun.objects.filter(card=twice).exclude(status=Status.QUEUED).count() == 1
    assert not SnippetRun.objects.filter(card=twice, status=Status.QUEUED).exists()


@pytest.mark.django_db
def test_it_adopts_an_output_card_imported_before_the_checks() -> None:
    note = Note.objects.create(slug="old", path="notes/old.md", title="Old", content="# Old", content_hash="0")
    card = Card.objects.create(
        note=note,
        key="k",
        kind=Card.Kind.OUTPUT,
        front="Old: 下面代码最后一行的输出是什么?\n\n```python\ntorch.randn(1)\n```",
        back="```text\ntensor([0.5])\n```",
        content_hash="h",
    )
    assert verify.sync([card]) == {"pending": 1}
    card.refresh_from_db()
    assert not card.active  # out of review until its run qualifies
    assert OutputCheck.objects.get(card=card).in_note  # it was in review, so it is in its note
    finish(SnippetRun.objects.get(card=card), "random", "tensor([0.5])")
    assert OutputCheck.objects.get(card=card).state == "excluded"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.xdist_group("celery-redis")
def test_a_worker_brings_an_imported_card_into_review(workers: object, transactional_db: None) -> None:
    """``make run``'s order: the import queues the run, the worker runs it and the card enters review."""
    from tests.graders.conftest import Workers

    assert isinstance(workers, Workers)
    workers.current  # noqa: B018 - starts one when none is running
    card = import_note()
    assert not card.active
    deadline = time.monotonic() + 90
    while not Card.objects.filter(pk=card.pk, active=True).exists():
        assert time.monotonic() < deadline, (
            f"the worker never verified the card: {list(SnippetRun.objects.values('status', 'outcome', 'error'))} "
            f"{list(OutputCheck.objects.values())}"
        )
        time.sleep(0.1)
    card.refresh_from_db()
    assert card.back == "```text\ntensor([2, 4])\n```"
