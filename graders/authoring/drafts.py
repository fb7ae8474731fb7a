"""A course's drills as its editors write them (web process): drafts, asking for a check, publishing.

The ``courses`` app decides who may write a course (its team's owners and editors) and calls these with
that course; everything here keeps to the course it is given. An author is trusted no more than a learner:

- every size and count is capped per course (``Caps``, from settings): drafts, drills, a drill file's bytes,
  its cases and solutions, its limits, and checks per hour (count and sandbox seconds);
- nothing of a drill's text runs here: a check is a job (``graders.kinds.checks``) on a worker's sandbox pool;
- publishing writes only into the course's own notes and drills, under its qualified slugs
  (``Course.qualified``), never the bundled course's, and only a text whose last finished check passed.

Publishing makes a new version in place: the ``Drill`` row and its card keep their ids (submissions,
reviews and every learner's schedule of the card stay attached), and each published text is kept as a
``DrillRevision``, so a submission's ``drill_version`` always names a text that can be shown.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Model, Sum
from django.utils.translation import gettext as _

from cards.ingest.slugs import note_slug
from cards.models import Card, Course, Note
from graders.authoring.statement import drill_contradictions
from graders.drills.schema import Drill as DrillSpec
from graders.drills.schema import DrillError, DrillLimits, parse_drill
from graders.kinds import examples
from graders.management.commands.import_drills import CARD_POSITION_BASE, card_fields, card_key, drill_fields
from graders.models import Drill, DrillCheck, DrillDraft, DrillExamples, DrillRevision
from jobs import tasks
from jobs.status import PENDING, Status

DRAFT_PATH = "drill.toml"  # the name messages give a draft's text
# The most an authored drill may ask of a sandbox runner (the bundled drills ask at most 4 s, 5 s, 1 GiB).
MAX_LIMITS = DrillLimits(cpu_seconds=5.0, wall_seconds=10.0, memory_mb=2048)
SLUG_MAX = 120  # Drill.slug


class Refused(Exception):
    """What an editor asked for cannot be done; the message says why, in words they can act on."""


@dataclass(frozen=True)
class Caps:
    drills: int
    drafts: int
    drill_bytes: int
    cases: int
    solutions: int
    checks_per_hour: int
    check_seconds_per_hour: int

    @classmethod
    def from_settings(cls) -> Caps:
        return cls(
            drills=settings.COURSE_MAX_DRILLS,
            drafts=settings.COURSE_MAX_DRILL_DRAFTS,
            drill_bytes=settings.COURSE_MAX_DRILL_BYTES,
            cases=settings.COURSE_MAX_CASES,
            solutions=settings.COURSE_MAX_SOLUTIONS,
            checks_per_hour=settings.COURSE_CHECKS_PER_HOUR,
            check_seconds_per_hour=settings.COURSE_CHECK_SECONDS_PER_HOUR,
        )


def parse(text: str) -> DrillSpec:
    """The draft's drill, or ``DrillError`` naming the field that is wrong."""
    return parse_drill(text, DRAFT_PATH)


def size_problems(spec: DrillSpec, caps: Caps) -> list[str]:
    """What in a parsed drill is over the course's caps (the text's bytes are refused when it is saved)."""
    problems = []
    cases = sum(case.repeat for case in spec.examples + spec.hidden)
    if cases > caps.cases:
        message = _("The drill has %(cases)d cases (repeats counted); a course's drill may have %(most)d.")
        problems.append(message % {"cases": cases, "most": caps.cases})
    solutions = len(spec.wrong) + len(spec.alternatives)
    if solutions > caps.solutions:
        message = _("The drill has %(count)d wrong and alternative solutions; at most %(most)d.")
        problems.append(message % {"count": solutions, "most": caps.solutions})
    for name in ("cpu_seconds", "wall_seconds", "memory_mb"):
        if getattr(spec.limits, name) > getattr(MAX_LIMITS, name):
            message = _("limits.%(name)s may be at most %(most)g in a course's drill.")
            problems.append(message % {"name": name, "most": getattr(MAX_LIMITS, name)})
    return problems


def statement_problems(spec: DrillSpec) -> list[str]:
    return drill_contradictions(spec)


# ---------------------------------------------------------------------------------------------- drafts


def _lock(model: type[Model], pk: int, field: str) -> None:
    """Lock one row for the rest of the transaction by writing it unchanged (``SET field = field``): a write
    first, because on SQLite a transaction that read first fails at its first write when another process
    committed meanwhile ("database is locked", at once: make run's stack met it), while one that writes
    first waits its turn; on PostgreSQL it is a row lock like ``SELECT ... FOR UPDATE``."""
    model.objects.filter(pk=pk).update(**{field: F(field)})  # type: ignore[attr-defined]


def _text_fits(text: str, caps: Caps) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > caps.drill_bytes:
        message = _("The drill file is %(size)d bytes; a course's drill file may have %(most)d.")
        raise Refused(message % {"size": size, "most": caps.drill_bytes})
    if "\x00" in text:
        raise Refused(_("The drill file holds a NUL character."))


def _slug_of(text: str) -> str:
    """The text's slug when it is readable TOML with one (for lists), else ''."""
    try:
        slug = tomllib.loads(text).get("slug", "")
    except tomllib.TOMLDecodeError:
        return ""
    return slug[:SLUG_MAX] if isinstance(slug, str) else ""


def new_draft(course: Course, author: Any, text: str, caps: Caps | None = None) -> DrillDraft:
    """A new draft of the course (under its cap), saved whatever its text says: work is never lost."""
    caps = caps or Caps.from_settings()
    _text_fits(text, caps)
    with transaction.atomic():
        _lock(Course, course.pk, "slug")  # one count at a time per course
        if DrillDraft.objects.filter(course=course).count() >= caps.drafts:
            raise Refused(_("The course has %(most)d drafts, its most: delete some first.") % {"most": caps.drafts})
        return DrillDraft.objects.create(course=course, author=author, text=text, slug=_slug_of(text))


def save_text(draft: DrillDraft, author: Any, text: str, caps: Caps | None = None) -> DrillDraft:
    caps = caps or Caps.from_settings()
    _text_fits(text, caps)
    draft.text, draft.slug, draft.author = text, _slug_of(text), author
    draft.save(update_fields=["text", "slug", "author", "updated_at"])
    return draft


def draft_for_drill(course: Course, drill: Drill, author: Any) -> DrillDraft:
    """A draft holding the published text of one of the course's drills (the newest such draft when one exists
    with that very text), to change and publish again."""
    if drill.card.note.course_id != course.pk:
        raise Refused(_("That drill is not one of this course's."))
    same = DrillDraft.objects.filter(course=course, text=drill.definition).order_by("-updated_at").first()
    return same or new_draft(course, author, drill.definition)


# ---------------------------------------------------------------------------------------------- checks


def latest_check(draft: DrillDraft) -> DrillCheck | None:
    return DrillCheck.objects.filter(draft=draft).order_by("-queued_at", "-pk").first()


def request_check(draft: DrillDraft, user: Any, now: datetime, caps: Caps | None = None) -> DrillCheck:
    """Steps: 1. the text parses and fits the caps (else nothing is sent)  2. a check of this very text already
    waiting is the answer  3. the course's checks in the last hour (count and sandbox seconds) leave room
    4. a queued ``DrillCheck`` of exactly the draft's text, sent to a worker after commit."""
    caps = caps or Caps.from_settings()
    try:
        spec = parse(draft.text)
    except DrillError as exc:
        raise Refused(_("Fix the drill file first: %(error)s") % {"error": exc}) from None
    problems = size_problems(spec, caps)
    if problems:
        raise Refused(" ".join(problems))
    with transaction.atomic():
        _lock(Course, draft.course_id, "slug")  # one budget decision at a time per course
        waiting = DrillCheck.objects.filter(draft=draft, status__in=PENDING, text=draft.text).first()
        if waiting is not None:
            return waiting
        _within_budget(draft.course_id, now, caps)
        check = DrillCheck.objects.create(
            draft=draft, course_id=draft.course_id, requested_by=user, text=draft.text, queued_at=now
        )
        tasks.enqueue_on_commit(check)
    return check


def _within_budget(course_id: int, now: datetime, caps: Caps) -> None:
    recent = DrillCheck.objects.filter(course_id=course_id, queued_at__gt=now - timedelta(hours=1))
    if recent.count() >= caps.checks_per_hour:
        message = _("This course asked for %(most)d checks in the last hour, its most: try later.")
        raise Refused(message % {"most": caps.checks_per_hour})
    spent = (recent.aggregate(total=Sum("sandbox_ms"))["total"] or 0) / 1000
    if spent >= caps.check_seconds_per_hour:
        message = _(
            "This course's checks used %(spent).0f s of sandbox time in the last hour, its most (%(most)d s): "
            "try later."
        )
        raise Refused(message % {"spent": spent, "most": caps.check_seconds_per_hour})


# -------------------------------------------------------------------------------------------- publish


def publish_problems(draft: DrillDraft, caps: Caps | None = None) -> list[str]:
    """Why the draft cannot be published now (empty: it can). Read only: the page asks before offering it."""
    caps = caps or Caps.from_settings()
    if draft.course.is_bundled:
        return [_("The bundled course is published from the repository, never through the site.")]
    try:
        spec = parse(draft.text)
    except DrillError as exc:
        return [_("The drill file has an error: %(error)s") % {"error": exc}]
    problems = size_problems(spec, caps) + statement_problems(spec)
    if not draft.checked:
        problems.append(_("Check this text first: only a text whose last check passed is published."))
    elif not draft.passed:
        problems.append(_("The last check of this text failed: fix what it found and check again."))
    if _note(draft.course, spec) is None:
        message = _("The course has no note %(note)s ([source] note): add that note first.")
        problems.append(message % {"note": repr(spec.source.note)})
    if len(draft.course.qualified(spec.slug)) > SLUG_MAX:
        problems.append(_("The slug %(slug)s is too long.") % {"slug": repr(spec.slug)})
    return problems


def _note(course: Course, spec: DrillSpec) -> Note | None:
    """The course's own note named by ``[source] note`` (``name.md``), never another course's."""
    return Note.objects.filter(course=course, slug=course.qualified(note_slug(spec.source.note))).first()


def publish(draft: DrillDraft, user: Any, now: datetime, caps: Caps | None = None) -> DrillRevision:
    """Steps: 1. lock the draft; the last finished check passed on exactly its text, nothing else refuses
    2. the course's drill (``course.qualified(slug)``) and its card, created or updated in place
    3. the revision, numbered after the drill's last  4. the examples' outputs from the check (or a job)."""
    caps = caps or Caps.from_settings()
    with transaction.atomic():
        _lock(DrillDraft, draft.pk, "slug")
        draft = DrillDraft.objects.select_related("course").get(pk=draft.pk)
        problems = publish_problems(draft, caps)
        if problems:
            raise Refused(" ".join(problems))
        course, spec = draft.course, parse(draft.text)
        drill = _upsert(course, spec, draft.text, caps)
        last = DrillRevision.objects.filter(drill=drill).aggregate(last=Max("number"))["last"] or 0
        revision = DrillRevision.objects.create(
            drill=drill, number=last + 1, version=spec.version, definition=draft.text, published_by=user,
            published_at=now,
        )  # fmt: skip
        _examples(drill, draft.check_report or {}, now)
    return revision


def _upsert(course: Course, spec: DrillSpec, text: str, caps: Caps) -> Drill:
    """The course's drill and its drill card, in place: their ids (and all that hangs on them) stay."""
    stored = course.qualified(spec.slug)
    note = _note(course, spec)
    assert note is not None  # publish_problems said so
    existing = Drill.objects.select_for_update().select_related("card__note").filter(slug=stored).first()
    card = Card.objects.select_related("note").filter(key=card_key(stored)).first()
    for found in (existing.card if existing is not None else None, card):
        if found is not None and found.note.course_id != course.pk:
            raise Refused(_("That slug belongs to another course."))  # never: the slug carries the course's
    if existing is not None and existing.active and existing.version == spec.version:
        raise Refused(_("This text is already the published version."))
    if existing is None and Drill.objects.of_course(course).filter(active=True).count() >= caps.drills:
        raise Refused(_("The course has %(most)d drills, its most.") % {"most": caps.drills})
    kept = card is not None and card.note_id == note.pk
    position = card.position if card is not None and kept else _next_position(note)
    card, _created = Card.objects.update_or_create(key=card_key(stored), defaults=card_fields(spec, note, position))
    source_path = str(PurePosixPath("drills") / PurePosixPath(spec.source.note).stem / f"{spec.slug}.toml")
    drill, _created = Drill.objects.update_or_create(
        slug=stored, defaults={**drill_fields(spec, text, source_path), "card": card}
    )
    return drill


def _next_position(note: Note) -> int:
    last = Card.objects.filter(note=note, kind=Card.Kind.DRILL).aggregate(last=Max("position"))["last"]
    return max(last or CARD_POSITION_BASE, CARD_POSITION_BASE) + 1


def _examples(drill: Drill, report: dict[str, Any], now: datetime) -> None:
    """The drill page's example outputs: the check already ran the reference on them (same text, same
    version), so the row is stored done; without them a worker is asked, as ``import_drills`` does."""
    shown = report.get("examples") or []
    if report.get("version") != drill.version or not shown:
        examples.example_outputs(drill)
        return
    DrillExamples.objects.get_or_create(
        drill=drill,
        drill_version=drill.version,
        defaults={"status": Status.DONE.value, "outputs": shown, "finished_at": now, "queued_at": now},
    )
