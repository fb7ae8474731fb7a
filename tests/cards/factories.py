"""Small factories for review tests, independent of the notes importer."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from cards.models import Card, Note, Profile

_counter = itertools.count(1)
MATH = '<span class="math inline">\\(2 \\times 3\\)</span>'


def make_user(username: str | None = None, password: str | None = None, **profile: Any) -> AbstractBaseUser:
    """A user (log in with force_login, or pass a password: hashing one costs ~0.3 s); profile fields go on Profile."""
    user = get_user_model().objects.create_user(username or f"learner{next(_counter)}", password=password)
    if profile:
        Profile.objects.create(user=user, **profile)
    return user


def make_note(slug: str | None = None, **fields: Any) -> Note:
    n = next(_counter)
    defaults: dict[str, Any] = {
        "slug": slug or f"note-{n}",
        "path": f"notes/note-{n}.md",
        "title": f"张量基础 {n}",
        "content": "# 张量基础\n\n## 形状\n\n张量的形状是 `x.shape`。\n",
        "content_hash": f"{n:064x}",
    }
    return Note.objects.create(**{**defaults, **fields})


def make_card(note: Note | None = None, **fields: Any) -> Card:
    n = next(_counter)
    note = note or make_note()
    front = fields.pop("front", f"问题 {n}: `torch.zeros(2, 3).shape` 是什么?")
    back = fields.pop("back", f"答案 {n}: `torch.Size([2, 3])`, 即 \\(2 \\times 3\\)")
    defaults: dict[str, Any] = {
        "key": f"{n:064x}",
        "note": note,
        "kind": Card.Kind.QA,
        "front": front,
        "back": back,
        "front_html": f"<p>{front}</p>",
        "back_html": f"<p>答案 {n}: <code>torch.Size([2, 3])</code>, 即 {MATH}</p>",
        "heading_path": "张量基础 / 形状",
        "anchor": f"形状-{n}",  # each its own section: siblings are made on purpose
        "position": n,
        "content_hash": f"{n:064x}",
    }
    return Card.objects.create(**{**defaults, **fields})


def make_cards(count: int, note: Note | None = None) -> list[Card]:
    note = note or make_note()
    return [make_card(note=note) for _ in range(count)]
