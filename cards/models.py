"""Notes, the cards made from them, and each learner's SM-2 state for each card."""

from __future__ import annotations

import uuid
import zoneinfo
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Concat, StrIndex
from django.db.models.lookups import Exact, GreaterThan
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cards.extensions import course_reader_queries
from cards.ingest.concepts import Concept, ConceptError, ConceptMap

BUNDLED_COURSE = "pytorch"  # the slug of the course the repository's own notes and drills are imported into
# A course's notes and drills are stored under "<course slug>--<their own slug>" (the bundled course's alone
# keep their own slugs, so its URLs never changed): authored slugs never hold "--" (``authored_slug``).
COURSE_SEPARATOR = "--"


class CourseQuerySet(models.QuerySet["Course"]):
    def readable_by(self, user: Any) -> CourseQuerySet:
        """The public courses and the private ones a team of the learner's owns."""
        return self.filter(models.Q(public=True) | private_courses_of(getattr(user, "pk", None)))


def private_courses_of(user_id: int | None, field: str = "pk") -> models.Q:
    """``field`` names one of the private courses the learner may read (through the registered readers: a
    team's members read its course). Matches nothing for an anonymous user or when no app registered readers."""
    queries = course_reader_queries(user_id) if user_id else []
    found = models.Q(pk__in=[])
    for query in queries:
        found |= models.Q(**{f"{field}__in": query})
    return found


class Course(models.Model):
    """Notes and drills studied together: the bundled course (public, every learner's) or a team's own,
    which only that team's members see. Its notes' and drills' slugs carry its slug (``qualified``)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    public = models.BooleanField(default=False, help_text="Every learner studies it (the bundled course).")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CourseQuerySet.as_manager()

    class Meta:
        ordering = ["-public", "title", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(slug__contains=COURSE_SEPARATOR), name="course_slug_no_separator"
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_bundled(self) -> bool:
        return self.slug == BUNDLED_COURSE

    def qualified(self, slug: str) -> str:
        """The stored slug of this course's note or drill ``slug``: unique across courses."""
        return slug if self.is_bundled else f"{self.slug}{COURSE_SEPARATOR}{slug}"

    def unqualified(self, stored: str) -> str:
        """The slug as its author wrote it (what an export writes)."""
        return stored.removeprefix(f"{self.slug}{COURSE_SEPARATOR}")


BUNDLED_TITLE = "PyTorch 学习笔记 · PyTorch notes"


def bundled_course() -> Course:
    """The bundled course, made on first use (by the first import that writes a note of it)."""
    course, _ = Course.objects.get_or_create(slug=BUNDLED_COURSE, defaults={"title": BUNDLED_TITLE, "public": True})
    return course


class NoteQuerySet(models.QuerySet["Note"]):
    def visible_to(self, user: Any) -> NoteQuerySet:
        """The notes of courses the learner may read and their own imports: another learner's private deck and
        another team's course never show."""
        return self.filter(_note_visible(user))

    def hidden_from(self, user: Any) -> NoteQuerySet:
        return self.exclude(_note_visible(user))

    def of_course(self, course: Course) -> NoteQuerySet:
        return self.filter(course=course)


def _note_visible(user: Any) -> models.Q:
    user_pk = getattr(user, "pk", None)
    shared = models.Q(owner__isnull=True) & (
        models.Q(course__isnull=True) | models.Q(course__public=True) | private_courses_of(user_pk, "course")
    )
    own = models.Q(owner=user_pk) if user_pk else models.Q(pk__in=[])
    return shared | own


class Note(models.Model):
    """One imported markdown file (or Anki deck). Cards keep pointing at it across re-imports.

    ``course`` is the course the note belongs to (empty for a learner's Anki import); ``owner`` is set on a
    learner's own Anki import: its cards reach that learner alone."""

    slug = models.SlugField(max_length=120, unique=True)
    path = models.CharField(max_length=500, help_text="The file name the note was imported from.")
    title = models.CharField(max_length=300)
    content = models.TextField(help_text="The markdown source, kept to render the note page.")
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="own_notes"
    )
    course = models.ForeignKey(Course, null=True, blank=True, on_delete=models.PROTECT, related_name="notes")

    objects = NoteQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title


class CardQuerySet(models.QuerySet["Card"]):
    def active(self) -> CardQuerySet:
        return self.filter(active=True)

    def update(self, **kwargs: Any) -> int:
        """Every bulk change moves ``updated_at`` too (``bulk_update`` comes through here): the review queue
        keeps the deck's order and siblings in memory and rebuilds them when the newest ``updated_at`` moves
        (``cards.queueing.deck_stamp``), so a change that left it alone would go unseen."""
        kwargs.setdefault("updated_at", timezone.now())
        return super().update(**kwargs)

    def visible_to(self, user: Any) -> CardQuerySet:
        """Less the cards of other learners' private decks (a subquery over the few owned notes)."""
        return self.exclude(note__in=Note.objects.hidden_from(user))


class Card(models.Model):
    class Kind(models.TextChoices):
        QA = "qa", _("Question")
        MAPPING = "mapping", _("Mapping")
        CLOZE = "cloze", _("Cloze")
        OUTPUT = "output", _("Output")
        DRILL = "drill", _("Coding drill")

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    key = models.CharField(
        max_length=64, unique=True, help_text="Stable across re-imports: note, heading path, kind and identity."
    )
    note = models.ForeignKey(Note, on_delete=models.PROTECT, related_name="cards")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    front = models.TextField(help_text="Markdown.")
    back = models.TextField(help_text="Markdown.")
    front_html = models.TextField(help_text="Sanitised HTML rendered at import time.")
    back_html = models.TextField(help_text="Sanitised HTML rendered at import time.")
    heading_path = models.CharField(max_length=500, blank=True)
    anchor = models.CharField(max_length=200, blank=True, help_text="The heading's id on the rendered note page.")
    tags = models.JSONField(default=list, blank=True)
    position = models.PositiveIntegerField(default=0, help_text="Order of the card within its note.")
    content_hash = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CardQuerySet.as_manager()

    class Meta:
        ordering = ["note", "position"]
        indexes = [
            # New-card queue: active cards in note order.
            models.Index(fields=["active", "note", "position"], name="card_active_order_idx"),
            # The deck stamp the review queue checks on every request: SELECT MAX(updated_at).
            models.Index(fields=["updated_at"], name="card_updated_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(front=""), name="card_front_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.front[:60]}"

    @property
    def source_path(self) -> str:
        """The headings under the note's title, for a source line that names the title once: an imported
        card's path is its deck's title, which the line already shows ("Deck › Deck" otherwise)."""
        title, path = self.note.title, self.heading_path
        if path == title:
            return ""
        return path.removeprefix(f"{title} › ") if title else path


class LearningStage(models.Model):
    """One step of the learning order for new cards across the bundled notes (basics first).

    A stage names note sections by heading: a card belongs to the first stage (in the default order)
    that lists its note and any heading on its path. Cards no stage names (a learner's own imported
    notes, a new section) come after every stage, each note in its own order. Loaded from
    ``notes/learning-order.toml`` by ``manage.py import_learning_order``.
    """

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    rank = models.PositiveIntegerField(help_text="Place in the default order, smallest first.")
    sections = models.JSONField(
        default=list, help_text='[{"note": "<note slug>", "headings": ["<heading>", ...]}, ...]'
    )
    concepts = models.JSONField(
        default=list,
        blank=True,
        help_text="The concepts this stage introduces, as the order file's [[stage.concept]] tables "
        "(cards.ingest.concepts): slug, title, requires, headings, keywords, cards.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["rank", "slug"]

    def clean(self) -> None:
        """The concepts must read as a concept map after the stages before this one (a concept requires only
        earlier ones; its keywords compile)."""
        earlier = LearningStage.objects.filter(rank__lt=self.rank).exclude(pk=self.pk).order_by("rank", "slug")
        try:
            concept_map([*((s.slug, s.concepts) for s in earlier), (self.slug, self.concepts)])
        except (ConceptError, KeyError, TypeError, ValueError) as error:
            raise ValidationError({"concepts": str(error)}) from None

    def __str__(self) -> str:
        return self.title


def concept_map(stages: Iterable[tuple[str, Any]]) -> ConceptMap:
    """The concepts of stages ``(slug, [[stage.concept]] tables)`` in order, as one map; raises
    ``ConceptError`` (or ``KeyError``/``TypeError``/``ValueError`` for a malformed table)."""
    concepts = []
    for stage, tables in stages:
        for table in tables or []:
            if not isinstance(table, dict) or not isinstance(table.get("slug"), str) or not table["slug"]:
                raise ConceptError(f"stage {stage!r}: a concept needs a slug")
            headings = frozenset(
                (section["note"], heading.replace("`", "").strip())
                for section in table.get("headings", [])
                for heading in section["headings"]
            )
            concepts.append(
                Concept(
                    slug=table["slug"],
                    title=str(table.get("title", table["slug"])),
                    stage=stage,
                    requires=tuple(table.get("requires", ())),
                    headings=headings,
                    keywords=tuple(table.get("keywords", ())),
                    cards=tuple(table.get("cards", ())),
                )
            )
    return ConceptMap(concepts)


def validate_stage_order(value: Any) -> None:
    """A stored learning order: a list of known stage slugs, each once. The queue ignores a slug whose stage
    a later import removed, but a new order may only name stages that exist now."""
    if not isinstance(value, list) or not all(isinstance(slug, str) for slug in value):
        raise ValidationError(gettext("A learning order is a list of stage slugs."))
    repeated = sorted({slug for slug in value if value.count(slug) > 1})
    if repeated:
        raise ValidationError(gettext("Each stage comes once; repeated: %(stages)s.") % {"stages": ", ".join(repeated)})
    unknown = sorted(set(value) - set(LearningStage.objects.filter(slug__in=value).values_list("slug", flat=True)))
    if unknown:
        raise ValidationError(gettext("No such stage: %(stages)s.") % {"stages": ", ".join(unknown)})


def default_time_zone() -> str:
    """A callable default, so a changed TIME_ZONE setting never needs a migration."""
    return settings.TIME_ZONE


def validate_time_zone(value: str) -> None:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            gettext("%(zone)s is not a known IANA time zone, such as Asia/Shanghai.") % {"zone": repr(value)}
        ) from None


class Scheduler(models.TextChoices):
    SM2 = "sm2", "SM-2"
    FSRS = "fsrs", "FSRS-6"


class Language(models.TextChoices):
    """The interface languages (settings.LANGUAGES); "" follows the browser's Accept-Language."""

    BROWSER = "", _("As my browser asks")
    EN = "en", "English"
    ZH_HANS = "zh-hans", "简体中文"


class Profile(models.Model):
    """A learner's review settings. Created on first use, so every user has one without a signal."""

    OWN_ORDER = "own"  # ``learning_order_source`` once the learner picked their order themselves

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    time_zone = models.CharField(max_length=64, default=default_time_zone, validators=[validate_time_zone])
    new_cards_per_day = models.PositiveIntegerField(default=20)
    reviews_per_day = models.PositiveIntegerField(default=200)
    day_start_hour = models.PositiveSmallIntegerField(
        default=4, help_text="The learner's day starts at this hour (local time), like Anki's next day starts at."
    )
    scheduler = models.CharField(
        max_length=8,
        choices=Scheduler.choices,
        default=Scheduler.SM2,
        help_text="Which scheduler sets due days: SM-2 (default) or FSRS-6.",
    )
    fuzz = models.BooleanField(
        default=False,
        help_text="Move each due day a little (to the least busy day nearby, away from related cards). "
        "Off, SM-2 is exactly SM-2.",
    )
    scheduler_chosen = models.BooleanField(
        default=False, help_text="The learner picked the scheduler; otherwise their first team's default applies."
    )
    scheduler_switched_at = models.DateTimeField(null=True, blank=True, help_text="The last switch of scheduler.")
    desired_retention = models.DecimalField(
        max_digits=3,
        decimal_places=2,
        default=Decimal("0.90"),
        help_text="FSRS schedules each card for when recall is predicted to fall to this probability.",
    )
    fsrs_parameters = models.JSONField(
        null=True, blank=True, help_text="This learner's fitted FSRS-6 parameters; empty means the defaults."
    )
    fsrs_parameters_version = models.PositiveIntegerField(
        default=0, help_text="0 for the defaults; bumped each time optimisation keeps new parameters."
    )
    learning_order = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_stage_order],
        help_text="Stage slugs in the order this learner's new cards follow; empty means the default order. "
        "Stages left out follow in the default order.",
    )
    # Opaque to cards: the app that wrote the order names itself here (a team: "team:<uuid>"), so it can
    # rewrite the orders it set and leave the others alone. "" = nobody chose yet; OWN_ORDER = the learner did.
    learning_order_source = models.CharField(max_length=100, blank=True, default="")
    day_floor = models.DateField(
        null=True,
        blank=True,
        help_text="The day begun when the time zone or day start last changed: no earlier day opens again.",
    )
    language = models.CharField(
        max_length=16,
        choices=Language.choices,
        blank=True,
        default=Language.BROWSER,
        help_text="The interface language the learner chose; restored at login on any browser (docs/i18n.md).",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(language__in=["", "en", "zh-hans"]), name="profile_language_known"
            ),
            models.CheckConstraint(condition=models.Q(scheduler__in=["sm2", "fsrs"]), name="profile_scheduler_valid"),
            models.CheckConstraint(
                condition=models.Q(desired_retention__gte=Decimal("0.70"), desired_retention__lte=Decimal("0.99")),
                name="profile_desired_retention_range",
            ),
            models.CheckConstraint(condition=models.Q(new_cards_per_day__lte=1000), name="profile_new_per_day_range"),
            models.CheckConstraint(
                condition=models.Q(reviews_per_day__lte=10000), name="profile_reviews_per_day_range"
            ),
            models.CheckConstraint(condition=models.Q(day_start_hour__lte=23), name="profile_day_start_hour_range"),
        ]

    def __str__(self) -> str:
        return f"profile of {self.user_id}"

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.time_zone)

    def day_at(self, now: datetime) -> date:
        """The learner day at ``now``: the local date in their zone with the day starting at ``day_start_hour``,
        never before ``day_floor``. A day is fixed once begun: moving the zone west cannot reopen yesterday
        (its XP a second time, a broken streak mended); the clock waits at the pinned day until it catches up."""
        day = (now.astimezone(self.zone) - timedelta(hours=self.day_start_hour)).date()
        return max(day, self.day_floor) if self.day_floor else day

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Pin the day begun under the old clock when the time zone or day start changes (``day_at``)."""
        update_fields = kwargs.get("update_fields")
        if self.pk and (update_fields is None or {"time_zone", "day_start_hour"} & set(update_fields)):
            if self._pin_day_begun(timezone.now()) and update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "day_floor"}
        super().save(*args, **kwargs)

    def _pin_day_begun(self, now: datetime) -> bool:
        stored = Profile.objects.filter(pk=self.pk).values("time_zone", "day_start_hour", "day_floor").first()
        if stored is None or (stored["time_zone"], stored["day_start_hour"]) == (self.time_zone, self.day_start_hour):
            return False
        before = Profile(time_zone=stored["time_zone"], day_start_hour=stored["day_start_hour"])
        before.day_floor = stored["day_floor"]
        self.day_floor = before.day_at(now)
        return True

    def set_learning_order(self, stages: list[str], source: str) -> None:
        """Store a checked order (``ValidationError`` names the bad slug and nothing is written) and who set it."""
        validate_stage_order(stages)
        self.learning_order, self.learning_order_source = list(stages), source
        self.save(update_fields=["learning_order", "learning_order_source"])


class FirstLine(models.Func):
    """A text's first line: a mapping card's answer without the note shown under it."""

    output_field = models.TextField()
    template = "SUBSTR(%(expressions)s, 1, INSTR(%(expressions)s || CHAR(10), CHAR(10)) - 1)"

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="SPLIT_PART(%(expressions)s, CHR(10), 1)", **extra)


def siblings(outer: str = "", inner: str = "") -> models.Q:
    """Anki's siblings: the cards made from one note entry. Here the two directions of one mapping row:
    cards of the same note, both mappings, one asking for what the other answers (its front holds
    ": <the other's answer>"). ``outer`` and ``inner`` are the paths to the card from the outer query and
    from the subquery ("" for Card, "card__" for CardState and ReviewLog). Other kinds have no siblings:
    each question, cloze and snippet is its own entry, so a section never holds its other cards back."""

    def asks_for_answer_of(front: Any, back: Any) -> GreaterThan:
        return GreaterThan(StrIndex(front, Concat(models.Value(": "), FirstLine(back))), 0)

    return (
        models.Q(**{f"{inner}note": models.OuterRef(f"{outer}note"), f"{inner}kind": Card.Kind.MAPPING})
        & models.Q(Exact(models.OuterRef(f"{outer}kind"), Card.Kind.MAPPING))
        & ~models.Q(**{f"{inner}pk": models.OuterRef(f"{outer}pk")})
        & (
            models.Q(asks_for_answer_of(models.F(f"{inner}front"), models.OuterRef(f"{outer}back")))
            | models.Q(asks_for_answer_of(models.OuterRef(f"{outer}front"), models.F(f"{inner}back")))
        )
    )


def sibling_cards(card: str = "") -> models.QuerySet[Card]:
    """The siblings of the outer query's card (``card`` is the path to it: "" for Card, "card__" for
    CardState), as a Card subquery rooted at the cards of its note."""
    return Card.objects.filter(siblings(card, ""))


def has_sibling(card: str, where: models.QuerySet[Card]) -> models.Q:
    """True for an outer card of a kind that has siblings and one of them in ``where`` (a ``sibling_cards``
    query). The kind is tested first, outside the subquery, so the database looks for siblings only for
    mapping cards instead of scanning every card's note for every due card."""
    return models.Q(**{f"{card}kind": Card.Kind.MAPPING}) & models.Q(models.Exists(where))


def answered_sibling_today(user: object, today: date, card: str = "") -> models.Q:
    """Anki's bury-siblings, with nothing written: true for a card (``card`` is the path to it from
    the outer query: "" for Card, "card__" for CardState) once a sibling of it (``siblings``) was
    answered today, so a learner never meets both directions of a mapping row on one day; same-day
    repeats of the answered card itself still come."""
    return has_sibling(card, sibling_cards(card).filter(answered_today(user, today)))


def answered_today(user: object, today: date) -> models.Exists:
    """For a Card subquery: this card was answered today."""
    return models.Exists(ReviewLog.objects.filter(user=user, review_day=today, card=models.OuterRef("pk")))


class CardStateQuerySet(models.QuerySet["CardState"]):
    """The three review queues. ``today`` is always the learner's day (see cards.review.learner_today)."""

    def available(self, user: object, today: date) -> CardStateQuerySet:
        """Not suspended, not buried, card still active: what any queue may show."""
        return self.filter(user=user, card__active=True, suspended=False).filter(
            models.Q(buried_until__isnull=True) | models.Q(buried_until__lte=today)
        )

    def due_for(self, user: object, today: date) -> CardStateQuerySet:
        """Seen cards whose due day has come, most overdue first; siblings of today's answers wait."""
        return (
            self.available(user, today)
            .filter(last_reviewed_at__isnull=False, due__lte=today)
            .exclude(answered_sibling_today(user, today, card="card__"))
            .order_by("due", "last_reviewed_at", "pk")
        )

    def repeats_for(self, user: object, today: date) -> CardStateQuerySet:
        """SM-2 step 7: cards rated below 4 today, until they are rated 4 or 5; the longest-waiting first."""
        return (
            self.available(user, today)
            .filter(needs_repeat=True, last_review_day=today)
            .order_by("last_reviewed_at", "pk")
        )

    def blocking_new(self, user: object, today: date) -> CardStateQuerySet:
        """States that take a card out of the new queue: already seen, suspended or buried."""
        return self.filter(user=user).filter(
            models.Q(last_reviewed_at__isnull=False) | models.Q(suspended=True) | models.Q(buried_until__gt=today)
        )


class CardState(models.Model):
    """One learner's SM-2 state for one card. No row (or a row never reviewed) means the card is new."""

    # db_index off: the (user, due) index and the (user, card) unique constraint both lead with user.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="card_states", db_index=False
    )
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="states")
    # Exact hundredths: SM-2's EF moves in steps of 0.02 and a float would drift (DESIGN.md).
    easiness = models.DecimalField(max_digits=4, decimal_places=2, default=Decimal("2.50"))
    interval = models.PositiveIntegerField(default=0, help_text="Days.")
    repetitions = models.PositiveIntegerField(default=0)
    due = models.DateField(help_text="The learner's day (not UTC) on which the card comes back.")
    lapses = models.PositiveIntegerField(default=0)
    # FSRS's memory state after the last review; empty until the learner's first FSRS review or switch.
    stability = models.FloatField(null=True, blank=True, help_text="FSRS: days until recall falls to 90 %.")
    difficulty = models.FloatField(null=True, blank=True, help_text="FSRS: 1 (easy) to 10 (hard).")
    suspended = models.BooleanField(default=False)
    buried_until = models.DateField(null=True, blank=True, help_text="Hidden from the queues before this day.")
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    last_review_day = models.DateField(null=True, blank=True)
    needs_repeat = models.BooleanField(default=False, help_text="Rated below 4 on last_review_day (SM-2 step 7).")
    version = models.PositiveIntegerField(
        default=0, help_text="Bumped by every change; a rating form carries it so a double submit records once."
    )
    user_note = models.TextField(blank=True, help_text="The learner's own note, shown with the answer.")

    objects = CardStateQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "card"], name="cardstate_user_card_unique"),
            models.CheckConstraint(condition=models.Q(easiness__gte=Decimal("1.30")), name="cardstate_easiness_min"),
            models.CheckConstraint(condition=models.Q(easiness__lte=Decimal("99.99")), name="cardstate_easiness_max"),
            models.CheckConstraint(
                condition=models.Q(stability__isnull=True, difficulty__isnull=True)
                | models.Q(stability__gt=0, difficulty__gte=1, difficulty__lte=10),
                name="cardstate_fsrs_memory_valid",
            ),
        ]
        indexes = [
            # The due queue and the forecast: WHERE user = ? AND due <= ? ORDER BY due.
            models.Index(fields=["user", "due"], name="cardstate_user_due_idx"),
            # The same-day repeat queue: WHERE user = ? AND needs_repeat AND last_review_day = ?.
            models.Index(
                fields=["user", "last_review_day"],
                condition=models.Q(needs_repeat=True),
                name="cardstate_user_repeat_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.card_id} due {self.due}"

    @property
    def is_new(self) -> bool:
        return self.last_reviewed_at is None


class LiveReviewLogs(models.Manager["ReviewLog"]):
    """The reviews that count: the ledger less undone reviews and the entries that undid them.

    Every reader of reviews (stats, XP, streaks, boards, history, limits, FSRS) goes through this
    default manager, so an undone review and its reversal count as nothing anywhere. The partial unique
    index on ``reverses`` makes the anti-join an index probe.
    """

    def get_queryset(self) -> models.QuerySet[ReviewLog]:
        reversals = ReviewLog.ledger.filter(reverses=models.OuterRef("pk"))
        return super().get_queryset().filter(reverses__isnull=True).exclude(models.Exists(reversals))


class ReviewLog(models.Model):
    """One row per review, never updated nor deleted: the append-only ledger and the source of truth
    for stats, XP and leaderboards.

    Undo appends a reversal: a copy of the undone entry with ``reverses`` pointing at it. ``objects``
    reads the reviews that count (neither reversed nor a reversal); ``ledger`` reads every row.
    """

    class Source(models.TextChoices):
        SELF = "self", _("Self-rated")
        GRADER = "grader", _("Graded drill")
        OUTPUT = "output", _("Output card")
        # Imported history (cards.history): reviews done elsewhere or earlier. Read by the scoring, the
        # fit and the stats; never XP, a board's reviews nor a streak (teams.activity, cards.review).
        IMPORT = "import", _("Imported history")

    # db_index off on both: the named indexes below cover these lookups.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_logs", db_index=False
    )
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="review_logs", db_index=False)
    quality = models.PositiveSmallIntegerField()
    duration_ms = models.PositiveIntegerField(default=0)
    reviewed_at = models.DateTimeField()
    review_day = models.DateField(help_text="The learner's day of the review, in their time zone.")
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.SELF)
    was_new = models.BooleanField(default=False, help_text="The card's first review: counts against the new limit.")
    is_same_day_repeat = models.BooleanField(default=False, help_text="SM-2 step 7 repeat: the state did not change.")
    easiness_before = models.DecimalField(max_digits=4, decimal_places=2)
    interval_before = models.PositiveIntegerField()
    repetitions_before = models.PositiveIntegerField()
    due_before = models.DateField(null=True, blank=True, help_text="Empty when the card was new.")
    easiness_after = models.DecimalField(max_digits=4, decimal_places=2)
    interval_after = models.PositiveIntegerField()
    repetitions_after = models.PositiveIntegerField()
    due_after = models.DateField()
    # What research needs (srs-benchmark's columns): the days since the card's previous review and the
    # interval that review had scheduled (both empty on a card's first review), and who scheduled it.
    elapsed_days = models.PositiveIntegerField(null=True, blank=True)
    scheduled_days = models.PositiveIntegerField(null=True, blank=True)
    scheduler = models.CharField(max_length=8, choices=Scheduler.choices, default=Scheduler.SM2)
    parameters_version = models.PositiveIntegerField(
        default=0, help_text="The learner's FSRS parameter version in force (0: the defaults)."
    )
    # Everything undo needs to put the CardState back exactly; null when the review created the row.
    prior_state = models.JSONField(null=True, blank=True)
    # Set on a reversal only: the entry this one undoes (at most one reversal each: the partial unique index).
    reverses = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="reversals", db_index=False
    )

    objects = LiveReviewLogs()
    ledger = models.Manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["reverses"], condition=models.Q(reverses__isnull=False), name="reviewlog_reverses_once"
            ),
            models.CheckConstraint(condition=models.Q(quality__lte=5), name="reviewlog_quality_range"),
            models.CheckConstraint(
                condition=models.Q(source__in=["self", "grader", "output", "import"]),
                name="reviewlog_source_valid",
            ),
            models.CheckConstraint(condition=models.Q(scheduler__in=["sm2", "fsrs"]), name="reviewlog_scheduler_valid"),
        ]
        indexes = [
            # Stats, streaks and undo: WHERE user = ? ORDER BY reviewed_at (DESC) / a time range.
            models.Index(fields=["user", "reviewed_at"], name="reviewlog_user_time_idx"),
            # Today's counts against the daily limits: WHERE user = ? AND review_day = ?.
            models.Index(fields=["user", "review_day"], name="reviewlog_user_day_idx"),
            # A card's history (browse page, card stats): WHERE card = ?.
            models.Index(fields=["card"], name="reviewlog_card_idx"),
        ]

    def __str__(self) -> str:
        undo = f" (undoes {self.reverses_id})" if self.reverses_id else ""
        return f"{self.user_id}/{self.card_id} q{self.quality} on {self.review_day}{undo}"


class Credit(models.Model):
    """A FIRe credit (``cards.review.credit_prerequisites``): what one passed drill's rating did to a card it
    builds on, appended in the rating's transaction beside its ``ReviewLog`` entry and never updated.

    Part of that rating's recorded effect, not a review: no reader of reviews sees it (calibration, the fit and
    the stats read answers only). Undoing the entry puts every credited card back from ``prior_state`` (the
    shape a ``ReviewLog`` keeps for its own card), so an undo is exact for the credited cards too.
    """

    review = models.ForeignKey(ReviewLog, on_delete=models.CASCADE, related_name="credits")
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="+", db_index=False)
    prior_state = models.JSONField(help_text="The credited card's state before the credit, as undo restores it.")
    stability_after = models.FloatField()
    due_after = models.DateField()

    def __str__(self) -> str:
        return f"credit of {self.card_id} by review {self.review_id}"


class TouchedDay(models.Model):
    """A learner day that a fact changed (a rating, an undo, a verdict, an output-card answer) and whose
    team rollup and boards are not recomputed yet: the one route from a fact to the boards.

    Written in the fact's own transaction (``cards.touched.touch``), so a rolled-back fact leaves none and
    a committed one cannot be lost by a dying process; ``teams.tasks.refresh_touched_days`` (beat, every
    second) deletes each row in the transaction that recomputes its day. Unique on (user, day): facts
    that come while a day waits share its one recompute.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField(help_text="The learner day (their zone, their day start).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "day"], name="touchedday_user_day_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.day}"


class Optimisation(models.Model):
    """One fit of a learner's FSRS parameters on the worker: queued, running, then done or failed.

    The settings page shows the latest; the beat job reads it to decide when to fit again.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="optimisations", db_index=False
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(
        max_length=200, blank=True, help_text="The process running it (quizsite.claims): a dead one gives it up."
    )
    reviews = models.PositiveIntegerField(default=0, help_text="The learner's scored reviews when it ran.")
    test_points = models.PositiveIntegerField(default=0, help_text="Held-out reviews the two parameter sets met.")
    log_loss_before = models.FloatField(null=True, blank=True)
    log_loss_after = models.FloatField(null=True, blank=True)
    kept = models.BooleanField(
        default=False, help_text="The fitted parameters predicted the held-out reviews better, beyond noise."
    )
    split_day = models.DateField(
        null=True, blank=True, help_text="The first held-out day: the fit trained only on reviews before it."
    )
    parameters = models.JSONField(null=True, blank=True, help_text="What the fit produced, kept or not.")
    parameters_before = models.JSONField(
        null=True, blank=True, help_text="The parameters in use when it ran, which the fit was compared against."
    )
    message = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["queued", "running", "done", "failed"]),
                name="optimisation_status_valid",
            ),
            # At most one fit per learner waits or runs at a time.
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(status__in=["queued", "running"]),
                name="optimisation_one_active_per_user",
            ),
        ]
        indexes = [
            # The settings page and the beat job: WHERE user = ? ORDER BY created_at DESC LIMIT 1.
            models.Index(fields=["user", "-created_at"], name="optimisation_user_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.status} {self.created_at:%Y-%m-%d}"
