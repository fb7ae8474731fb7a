"""import_drills: drill files become Drill rows and drill cards, idempotently."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from cards.models import Card, Note
from graders.models import Drill, DrillExamples
from tests.graders.conftest import drill_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path: Path, note: Note) -> Path:
    (tmp_path / "basics").mkdir()
    (tmp_path / "basics" / "add-one.toml").write_text(drill_text(), encoding="utf-8")
    return tmp_path


def run(folder: Path, *args: str) -> str:
    out = StringIO()
    call_command("import_drills", "--folder", str(folder), *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_drill_and_its_card(folder: Path, note: Note) -> None:
    assert "created 1" in run(folder)
    drill = Drill.objects.select_related("card").get(slug="add-one")
    assert (drill.card.key, drill.card.kind, drill.card.note_id) == ("drill:add-one", Card.Kind.DRILL, note.pk)
    assert drill.card.anchor == "tensors" and "Add one" in drill.card.front_html
    assert drill.definition == drill_text() and drill.entry_point == "solution" and drill.active
    assert drill.limits == {"cpu_seconds": 10.0, "wall_seconds": 10.0, "memory_mb": 1024}


def test_it_is_idempotent(folder: Path) -> None:
    run(folder)
    card_pk, version = Drill.objects.values_list("card_id", "version").get()
    assert "unchanged 1" in run(folder)
    assert Drill.objects.values_list("card_id", "version").get() == (card_pk, version)
    assert Card.objects.count() == 1


def test_it_updates_a_changed_drill_in_place(folder: Path) -> None:
    run(folder)
    drill = Drill.objects.get()
    path = folder / "basics" / "add-one.toml"
    path.write_text(path.read_text().replace('title = "Add one"', 'title = "Add one, again"'))
    assert "updated 1" in run(folder)
    changed = Drill.objects.select_related("card").get()
    assert (changed.pk, changed.card_id) == (drill.pk, drill.card_id)
    assert changed.version != drill.version and changed.title == "Add one, again"
    assert "Add one, again" in changed.card.front


def test_it_writes_nothing_on_a_dry_run(folder: Path) -> None:
    assert "would have created 1" in run(folder, "--dry-run")
    assert not Drill.objects.exists() and not Card.objects.exists()


def test_it_retires_drills_whose_file_vanished(folder: Path) -> None:
    run(folder)
    (folder / "basics" / "add-one.toml").unlink()
    assert "retired 1" in run(folder)
    drill = Drill.objects.select_related("card").get()
    assert not drill.active and not drill.card.active
    (folder / "basics" / "add-one.toml").write_text(drill_text(), encoding="utf-8")
    run(folder)
    drill.refresh_from_db()
    drill.card.refresh_from_db()
    assert drill.active and drill.card.active


def test_it_refuses_drills_whose_note_is_not_imported(folder: Path, note: Note) -> None:
    note.delete()
    with pytest.raises(CommandError, match="pytorch-basics.md"):
        run(folder)


def test_it_names_the_file_and_field_of_a_broken_drill(folder: Path) -> None:
    (folder / "basics" / "add-one.toml").write_text(drill_text().replace('entry_point = "solution"', ""))
    with pytest.raises(CommandError, match=r"add-one\.toml.*entry_point"):
        run(folder)


def test_it_asks_a_worker_for_each_drill_versions_example_outputs(
    folder: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """The drill page never asks (a GET writes nothing): the import does, once per drill version."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run(folder)
        run(folder)  # unchanged: the row is there, nothing more is queued
    drill = Drill.objects.get()
    assert list(DrillExamples.objects.values_list("drill_id", "drill_version")) == [(drill.pk, drill.version)]
    assert len(callbacks) == 1
    path = folder / "basics" / "add-one.toml"
    path.write_text(path.read_text().replace('title = "Add one"', 'title = "Add one, again"'))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run(folder)
    assert DrillExamples.objects.count() == 2 and len(callbacks) == 1


def test_it_warns_about_a_drill_whose_heading_its_note_lacks(folder: Path, note: Note) -> None:
    err = StringIO()
    call_command("import_drills", "--folder", str(folder), stdout=StringIO(), stderr=err)
    assert "warning: drill 'add-one': pytorch-basics.md has no heading 'Tensors'; fix its [source] heading" in (
        err.getvalue()
    )
    note.content = "# Basics\n\n## `Tensors` and shapes\n\n## Tensors\n\nText.\n"  # Markdown or plain: both match
    note.save(update_fields=["content"])
    err = StringIO()
    call_command("import_drills", "--folder", str(folder), stdout=StringIO(), stderr=err)
    assert err.getvalue() == ""


def test_its_card_links_to_the_note_page_id_of_a_heading_named_in_markdown(folder: Path, note: Note) -> None:
    from cards.rendering import render_markdown

    text = drill_text().replace('heading = "Tensors"', 'heading = "`x.view`的用法"')
    (folder / "basics" / "add-one.toml").write_text(text, encoding="utf-8")
    note.content = "# Basics\n\n## `x.view`的用法\n\nText.\n"
    note.save(update_fields=["content"])
    run(folder)
    anchor = Card.objects.get(key="drill:add-one").anchor
    assert f'id="{anchor}"' in render_markdown(note.content)
