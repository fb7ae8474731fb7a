"""``manage.py check_notes`` end to end: a small note imported as cards, snippets run in the real sandbox."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from cards.ingest import parse_note
from cards.models import Card, Note
from outputs.models import SnippetRun

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db]

NOTE = """\
# Fixture

## Right

```python
x = torch.tensor([1, 2])
x * 2
```

```
tensor([2, 4])
```

## Wrong

```python
torch.ones(2).sum()
```

```
tensor(3.)
```
"""


def _import(text: str) -> list[Card]:
    parsed = parse_note(text, "fixture")
    note = Note.objects.create(slug="fixture", path="notes/fixture.md", title="F", content=text, content_hash="0")
    return [
        Card.objects.create(
            key=spec.key,
            note=note,
            kind=spec.kind,
            front=spec.front,
            back=spec.back,
            front_html="f",
            back_html="b",
            heading_path=spec.heading_path,
            anchor=spec.anchor,
            position=spec.position,
            content_hash=spec.content_hash,
        )  # fmt: skip
        for spec in parsed.cards
        if spec.kind == "output"
    ]


def test_it_lists_the_wrong_snippet_only_and_caches_the_runs() -> None:
    cards = _import(NOTE)
    assert [c.heading_path for c in cards] == ["Right", "Wrong"]
    out = StringIO()
    call_command("check_notes", "--json", stdout=out, stderr=StringIO())
    findings = json.loads(out.getvalue())
    assert [(f["heading"], f["problem"]) for f in findings] == [("Wrong", "mismatch")]
    assert findings[0]["shown"] == "tensor(3.)" and findings[0]["real_output"] == "tensor(2.)"
    runs = {run.card_id: run for run in SnippetRun.objects.all()}
    assert (runs[cards[0].pk].status, runs[cards[0].pk].outcome) == ("done", "ok")
    assert runs[cards[0].pk].output == "tensor([2, 4])"
    first_ran_at = runs[cards[0].pk].finished_at

    text = StringIO()
    call_command("check_notes", stdout=text, stderr=StringIO())  # cached: no sandbox needed a second time
    assert text.getvalue().splitlines() == [
        f"error: notes/fixture.md › Wrong [card {cards[1].uuid}]: mismatch: "
        "the shown output differs from what torch prints"
    ]
    run = SnippetRun.objects.get(card=cards[0])
    run.refresh_from_db()
    assert run.finished_at == first_ran_at


def test_it_stores_nothing_in_a_dry_run() -> None:
    _import(NOTE.split("## Wrong")[0])
    out = StringIO()
    call_command("check_notes", "--dry-run", stdout=out, stderr=StringIO())
    assert out.getvalue() == ""
    assert not SnippetRun.objects.exists()
