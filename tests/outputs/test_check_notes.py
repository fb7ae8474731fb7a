"""Output cards run as shown: a note imported as cards, ``check_notes`` running its code in the real sandbox.

Only a card whose code runs alone, prints the same under two seeds and prints something on a CPU is
reviewed, and its back is what the sandbox printed; the rest are listed for the author.
"""

from __future__ import annotations

import json
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from cards.importing import NoteSource, import_notes
from cards.models import Card, CardState
from outputs.models import OutputCheck, SnippetRun
from tests.cards.factories import make_user

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

## Stale

```python
torch.ones(2).sum()
```

```
tensor(3.)
```

## Random

```python
torch.randn(2)
```

```
tensor([0.1, 0.2])
```

## Undefined

```python
alpha.shape
```

```
torch.Size([2])
```

## GPU

```python
if torch.cuda.is_available():
    print(torch.ones(1, device="cuda"))
```

```
tensor([1.], device='cuda:0')
```

## Raises

```python
>>> torch.cat([torch.tensor(1)])
Traceback (most recent call last):
  File "/home/someone/ipython.py", line 3326, in run_code
RuntimeError: zero-dimensional tensor (at position 0) cannot be concatenated
```
"""


def import_note(text: str) -> dict[str, Card]:
    """The note's output cards by heading, imported as the bundled notes are."""
    import_notes(
        [NoteSource(path=Path("notes/fixture.md"), display_path="notes/fixture.md", slug="fixture", text=text)]
    )
    return {card.heading_path: card for card in Card.objects.filter(kind=Card.Kind.OUTPUT)}


def check(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("check_notes", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def active_headings() -> list[str]:
    return sorted(Card.objects.active().filter(kind=Card.Kind.OUTPUT).values_list("heading_path", flat=True))


def test_it_reviews_only_the_cards_that_run_as_shown_with_what_the_sandbox_printed() -> None:
    cards = import_note(NOTE)
    assert sorted(cards) == ["GPU", "Raises", "Random", "Right", "Stale", "Undefined"]
    assert active_headings() == []  # nothing is reviewed before the sandbox has run it
    assert SnippetRun.objects.count() == 6  # requested on import, for the workers

    out, _ = check("--json")
    assert active_headings() == ["Raises", "Right", "Stale"]
    backs = {c.heading_path: c.back for c in Card.objects.active()}
    assert backs["Right"] == "```text\ntensor([2, 4])\n```"
    assert backs["Stale"] == "```text\ntensor(2.)\n```"  # not the note's old "tensor(3.)"
    # The author's home directory and the traceback are gone: the answer is the error the sandbox raised.
    assert (
        backs["Raises"] == "```text\nRuntimeError: zero-dimensional tensor (at position 0) cannot be concatenated\n```"
    )
    findings = {row["heading"]: row for row in json.loads(out)}
    assert {h: (r["severity"], r["problem"]) for h, r in findings.items()} == {
        "Stale": ("warning", "mismatch"),
        "Random": ("error", "random"),
        "Undefined": ("error", "undefined"),
        "GPU": ("error", "silent"),
    }
    assert findings["Stale"]["shown"] == "tensor(3.)" and findings["Stale"]["real_output"] == "tensor(2.)"
    assert "NameError: name 'alpha' is not defined" in findings["Undefined"]["detail"]
    _, err = check()  # cached
    assert "6 snippets checked; output cards: 3 verified by the sandbox, 3 kept out of review" in err
    states = dict(OutputCheck.objects.values_list("card__heading_path", "state"))
    assert states == {
        "Right": "verified",
        "Stale": "verified",
        "Raises": "verified",
        "Random": "excluded",
        "Undefined": "excluded",
        "GPU": "excluded",
    }


def test_the_audit_flags_no_active_output_card_after_the_check() -> None:
    import_note(NOTE)
    check()
    out = StringIO()
    call_command("audit_cards", stdout=out)
    assert "output cards: 3 active, 3 verified by the sandbox, 0 flagged; 3 kept out of review, 0 not checked yet" in (
        out.getvalue()
    )
    # A card activated behind the check's back (its run says random) is flagged, not counted verified.
    Card.objects.filter(heading_path="Random").update(active=True)
    out = StringIO()
    call_command("audit_cards", stdout=out)
    assert "4 active, 3 verified by the sandbox, 1 flagged" in out.getvalue()
    assert "notes/fixture.md › Random: random: prints something else with another seed" in out.getvalue()


def test_it_caches_the_runs_and_prints_one_line_per_finding() -> None:
    cards = import_note(NOTE)
    check()
    first = dict(SnippetRun.objects.values_list("card_id", "finished_at"))
    text, _ = check()
    assert dict(SnippetRun.objects.values_list("card_id", "finished_at")) == first  # no sandbox the second time
    lines = text.splitlines()
    assert len(lines) == 4
    assert check("-v", "0") == ("", "")  # make run's start stays quiet
    assert f"warning: notes/fixture.md › Stale [card {cards['Stale'].uuid}]: mismatch: " in text
    assert f"error: notes/fixture.md › GPU [card {cards['GPU'].uuid}]: silent: prints nothing on a CPU" in text


def test_re_import_retires_a_card_that_stops_qualifying_and_brings_it_back_with_its_history() -> None:
    import_note(NOTE)
    check()
    card = Card.objects.get(heading_path="Right")
    CardState.objects.create(user=make_user(), card=card, due=date(2030, 1, 1), repetitions=4, interval=9)

    broken = NOTE.replace("x = torch.tensor([1, 2])\nx * 2", "x * 2")  # the set-up is gone from the block
    import_note(broken)
    card.refresh_from_db()
    assert not card.active  # out of review at once: its code changed
    check()
    card.refresh_from_db()
    assert not card.active
    assert OutputCheck.objects.get(card=card).problem == "undefined"

    import_note(NOTE)  # fixed again: the cached run of this code applies at import, no sandbox needed
    card.refresh_from_db()
    assert card.active and card.back == "```text\ntensor([2, 4])\n```"
    assert CardState.objects.get(card=card).repetitions == 4


def test_a_card_whose_section_is_gone_stays_out_of_review_even_when_its_code_qualifies() -> None:
    import_note(NOTE)
    check()
    import_note(NOTE.split("## Stale")[0])
    assert active_headings() == ["Right"]
    check()
    assert active_headings() == ["Right"]
    assert not OutputCheck.objects.get(card__heading_path="Raises").in_note


def test_it_stores_nothing_and_changes_no_card_in_a_dry_run() -> None:
    import_note(NOTE.split("## Stale")[0])
    SnippetRun.objects.all().delete()
    out, _ = check("--dry-run")
    assert out == ""
    assert not SnippetRun.objects.exists()
    assert active_headings() == []


def test_with_queue_it_sends_the_missing_runs_to_the_workers_and_runs_nothing_here(
    django_capture_on_commit_callbacks: object,
) -> None:
    import_note(NOTE.split("## Stale")[0])
    SnippetRun.objects.all().delete()
    with django_capture_on_commit_callbacks() as callbacks:
        _, err = check("--queue")
    assert len(callbacks) == 1
    assert list(SnippetRun.objects.values_list("status", flat=True)) == ["queued"]
    assert active_headings() == []
    assert "0 snippets checked, 1 sent to the workers; output cards: 0 verified" in err
