"""Drills, the work graded against them (submissions, example outputs) and the graders' heartbeats; a course's
drills as its editors write them (drafts, their checks, the published revisions).

Sandbox work shares one lifecycle (``Job``, driven by ``jobs.lifecycle``): every move is a conditional
``update()`` that must change exactly one row, so two workers that both received the same message
can never both record a result. The abstract ``Job`` and the grading processes' heartbeats live in the
``jobs`` app (``jobs.models``), below this one.
"""

from __future__ import annotations

import functools
import math
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cards.models import Card, Course, Note
from graders.drills.schema import Drill as DrillSpec
from graders.drills.schema import parse_drill
from graders.drills.solution_key import KEY_LENGTH
from jobs.labels import translated_choices
from jobs.models import Job, job_constraints
from jobs.status import JOB_DONE, PENDING, VERDICTS, Status


class Device(models.TextChoices):
    CPU = "cpu", "CPU"
    CUDA = "cuda", _("CUDA GPU")


class Difficulty(models.TextChoices):
    EASY = "easy", _("Easy")
    MEDIUM = "medium", _("Medium")
    HARD = "hard", _("Hard")


class DrillQuerySet(models.QuerySet["Drill"]):
    def active(self) -> DrillQuerySet:
        return self.filter(active=True)

    def visible_to(self, user: Any) -> DrillQuerySet:
        """The drills of the courses the learner may read: another team's drill is not there for them."""
        return self.exclude(card__note__in=Note.objects.hidden_from(user))

    def of_course(self, course: Course) -> DrillQuerySet:
        """A course's drills (the bundled course's: also drills imported before courses, in no course)."""
        if course.is_bundled:
            return self.filter(models.Q(card__note__course=course) | models.Q(card__note__course__isnull=True))
        return self.filter(card__note__course=course)


@functools.lru_cache(maxsize=256)
def _parsed_definition(definition: str, source_path: str) -> DrillSpec:
    """Frozen and equal across calls, so the grading module's reference cache hits for every submission (the
    worker keeps the drill rows themselves: ``fastpath.grading_drills.grading_drill``)."""
    return parse_drill(definition, source_path)


class Drill(models.Model):
    """One coding drill, as imported from ``notes/drills/**.toml`` by ``import_drills``.

    ``definition`` keeps the whole drill file (cases, comparison, constraints...) so a
    worker grades exactly the version stored here, even if its own checkout differs;
    ``version`` is the hash of that text and is part of every reference-output cache key.
    """

    card = models.OneToOneField(Card, on_delete=models.PROTECT, related_name="drill")
    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=300)
    prompt_zh = models.TextField(blank=True)
    prompt_en = models.TextField(blank=True)
    entry_point = models.CharField(max_length=200, help_text="The function the learner writes, e.g. `solution`.")
    starter_code = models.TextField(blank=True)
    reference_code = models.TextField(help_text="Trusted reference solution; never shown to learners.")
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)
    difficulty = models.CharField(max_length=8, choices=Difficulty.choices, default=Difficulty.MEDIUM)
    tags = models.JSONField(default=list, blank=True, help_text='Topic tags, e.g. ["indexing", "broadcasting"].')
    track = models.CharField(max_length=60, blank=True, help_text="A named sequence, e.g. tensor-puzzles.")
    position = models.PositiveSmallIntegerField(default=0, help_text="The drill's place in its track.")
    limits = models.JSONField(default=dict, blank=True, help_text="Sandbox limits (time, memory, output).")
    definition = models.TextField(help_text="The drill file's TOML text: workers parse and grade exactly this.")
    version = models.CharField(max_length=64, help_text="Content hash of the drill definition.")
    source_path = models.CharField(max_length=500, help_text="The drill file, relative to the notes folder.")
    active = models.BooleanField(default=True, help_text="Cleared when the drill's file disappears.")
    solutions_public = models.BooleanField(
        default=False,
        help_text="Learners who solved it see every learner's accepted solutions, not only their teams' "
        "(set by staff or the owner of the drill's team).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DrillQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=models.Q(device__in=Device.values), name="drill_device_valid"),
            models.CheckConstraint(condition=~models.Q(entry_point=""), name="drill_entry_point_not_empty"),
            models.CheckConstraint(condition=models.Q(difficulty__in=Difficulty.values), name="drill_difficulty_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.slug}: {self.title}"

    @property
    def spec(self) -> DrillSpec:
        """The stored definition, parsed once per version in each process (what workers grade)."""
        return _parsed_definition(self.definition, self.source_path)

    @property
    def queue(self) -> str:
        """The Celery queue that grades this drill (a CPU worker may consume both)."""
        return settings.GRADER_QUEUE_GPU if self.device == Device.CUDA else settings.GRADER_QUEUE_CPU


SUBMISSION_STATUSES = translated_choices((*PENDING, *VERDICTS))  # the API's SubmissionStatusEnum too
JOB_STATUSES = translated_choices((*PENDING, *JOB_DONE))  # a run's and a counterexample's: the API's DrillRunStatusEnum


class SubmissionQuerySet(models.QuerySet["Submission"]):
    def pending(self) -> SubmissionQuerySet:
        return self.filter(status__in=PENDING)

    def history(self, user_id: int, drill_id: int) -> SubmissionQuerySet:
        """A learner's submissions to one drill, newest first (served by submission_user_drill_idx)."""
        return self.filter(user_id=user_id, drill_id=drill_id).order_by("-queued_at")


class Submission(Job):
    """Code a learner sent for a drill; its final status is the verdict."""

    FINAL = VERDICTS

    class Kind(models.TextChoices):
        SUBMIT = "submit", _("Submit")
        EXAMPLES = "examples", _("Run examples")

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False, help_text="The public id.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    drill = models.ForeignKey(Drill, on_delete=models.PROTECT, related_name="submissions")
    code = models.TextField()
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SUBMIT)
    seed = models.PositiveBigIntegerField(help_text="The review's seed: it groups the submissions of one review.")
    cases_seed = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Seed of this submission's own hidden cases, drawn fresh by the grader (re-grading with it "
        "reproduces the verdict); empty until graded, and for example runs.",
    )
    drill_version = models.CharField(max_length=64, help_text="The drill version the submission was graded against.")
    status = models.CharField(max_length=16, choices=SUBMISSION_STATUSES, default=Status.QUEUED.value)
    verdict = models.JSONField(null=True, blank=True, help_text="The grader's verdict, per test.")
    grading_ms = models.PositiveIntegerField(null=True, blank=True, help_text="Time spent in the grader itself.")
    worker = models.CharField(max_length=200, blank=True, help_text="Celery node that recorded the verdict.")
    device = models.CharField(max_length=16, blank=True, help_text="The device the code ran on.")
    solution_key = models.CharField(
        max_length=KEY_LENGTH,
        blank=True,
        help_text="An accepted attempt's normalised code's key (graders.drills.solution_key): equal keys, one group.",
    )

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at"]
        indexes = [
            # A learner's history for one drill, newest first (drill page, attempt counting).
            models.Index(fields=["user", "drill", "-queued_at"], name="submission_user_drill_idx"),
            # The reaper: pending rows by status and claim age. Partial, so finished rows cost nothing.
            models.Index(
                fields=["status", "claimed_at"], condition=models.Q(status__in=PENDING), name="submission_pending_idx"
            ),
            # A drill's solution groups (teams.solutions): WHERE drill = ? AND status = 'accepted' AND kind = 'submit'
            # [AND user IN (the viewer's team-mates)] GROUP BY solution_key, with MIN(id). Partial, so only accepted
            # attempts cost anything; user second, so a team's rows are a few probes; id as the last key, so
            # index-only (a key rather than INCLUDE: SQLite, make run's default, has no non-key columns).
            models.Index(
                fields=["drill", "user", "solution_key", "id"],
                condition=models.Q(status="accepted", kind="submit"),
                name="submission_solution_idx",
            ),
        ]
        constraints = [
            *job_constraints("submission", VERDICTS),
            models.CheckConstraint(condition=models.Q(kind__in=["submit", "examples"]), name="submission_kind_valid"),
            # A final submission always has its verdict; a pending one has none.
            models.CheckConstraint(
                condition=models.Q(status__in=PENDING, verdict__isnull=True)
                | (~models.Q(status__in=PENDING) & models.Q(verdict__isnull=False)),
                name="submission_final_has_verdict",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.uuid} {self.drill_id} {self.status}"

    @property
    def is_attempt(self) -> bool:
        """ "Run examples" grades the visible cases only and never counts as an attempt."""
        return self.kind == self.Kind.SUBMIT

    @property
    def ran_on(self) -> str:
        """The device the verdict ran on, in words: a cuda drill graded by a CPU-only worker (make run's
        GRADER_CPU_FALLBACK) says so, since the drill's own "cuda" would otherwise be the page's only word."""
        if not self.device:
            return ""
        if self.device == Device.CUDA:
            return str(Device.CUDA.label)
        if self.drill.device == Device.CUDA:
            return str(_("CPU (no GPU on this server)"))
        return str(Device.CPU.label)


class DrillReview(models.Model):
    """One learner's work on one drill from the moment it came due until it is rated.

    Its random ``seed`` is copied onto each submission made during the review: submissions belong to
    the review whose (user, drill, seed) they share, and a new review, with a new seed, starts each time
    the drill card comes due again. Each attempt's hidden cases come from a seed of its own
    (``Submission.cases_seed``, drawn by the grader), so what one verdict reveals never adds up.
    ``finished_at`` is set exactly once, by a conditional update, when the review is rated (accepted,
    moved on from, or given up).
    """

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        MOVED_ON = "moved_on", "Moved on without an accepted answer"
        GAVE_UP = "gave_up", "Gave up"
        EXPIRED = "expired", "Expired: the card came due again before it was rated"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drill_reviews")
    drill = models.ForeignKey(Drill, on_delete=models.CASCADE, related_name="reviews")
    seed = models.PositiveBigIntegerField(help_text="Random per review: it marks the review's submissions.")
    started_at = models.DateTimeField(default=timezone.now)
    reference_viewed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set when the learner opened the reference: an acceptance after it is a failed recall (2).",
    )
    hints_opened = models.PositiveSmallIntegerField(
        default=0,
        help_text="Hints opened, in the drill's order: one caps the quality at 4, two or more at 3.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, blank=True)
    quality = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The SM-2 quality it was rated.")

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            # The current review and a submission's review: WHERE user = ? AND drill = ? ORDER BY started_at DESC.
            models.Index(fields=["user", "drill", "-started_at"], name="drillreview_user_drill_idx"),
        ]
        constraints = [
            # At most one open review per learner and drill (two tabs opening one at once: one wins).
            models.UniqueConstraint(
                fields=["user", "drill"], condition=models.Q(finished_at__isnull=True), name="drillreview_one_open"
            ),
            models.CheckConstraint(condition=models.Q(quality__lte=5), name="drillreview_quality_range"),
            models.CheckConstraint(condition=models.Q(hints_opened__lte=3), name="drillreview_hints_range"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.drill_id} seed {self.seed}"

    @property
    def is_open(self) -> bool:
        return self.finished_at is None


class DrillExamples(Job):
    """The reference solution's outputs for one drill version's fixed examples, shown on the drill page.

    Computed once per version by a worker (the web process never imports torch) through the same
    sandbox as any submission; ``outputs`` stays null until then, and ``error`` says why it failed.
    """

    drill = models.ForeignKey(Drill, on_delete=models.CASCADE, related_name="example_outputs")
    drill_version = models.CharField(max_length=64)
    status = models.CharField(
        max_length=16, choices=translated_choices((*PENDING, *JOB_DONE)), default=Status.QUEUED.value
    )
    outputs = models.JSONField(null=True, blank=True, help_text='[{"name": ..., "output": ...}] in example order.')
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            *job_constraints("drillexamples", JOB_DONE),
            # The drill page's lookup: WHERE drill = ? AND drill_version = ?; one row (one computation) per version.
            models.UniqueConstraint(fields=["drill", "drill_version"], name="drillexamples_drill_version_unique"),
        ]
        indexes = [
            # The reaper: pending rows by status and claim age.
            models.Index(
                fields=["status", "claimed_at"],
                condition=models.Q(status__in=PENDING),
                name="drillexamples_pending_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"examples of {self.drill_id} at {self.drill_version[:12]}"


class DrillRun(Job):
    """One "Run" of a learner's code on arguments they typed, beside the reference's run on them
    (``graders.kinds.runs``): never graded, never rated, never near a hidden case or a seed.

    ``arguments`` are the learner's case expressions, checked by the web (``graders.drills.schema.call_arguments``)
    and evaluated only in a runner; ``result`` holds both outputs and the diff once final (``RunReport``).
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False, help_text="The public id.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drill_runs")
    drill = models.ForeignKey(Drill, on_delete=models.CASCADE, related_name="runs")
    drill_version = models.CharField(max_length=64, help_text="The drill version whose reference it ran.")
    code = models.TextField()
    arguments = models.JSONField(default=list, help_text="The argument expressions, in order.")
    status = models.CharField(max_length=16, choices=JOB_STATUSES, default=Status.QUEUED.value)
    result = models.JSONField(null=True, blank=True, help_text="Both outputs and their diff (RunReport).")

    class Meta:
        ordering = ["-queued_at"]
        constraints = [*job_constraints("drillrun", JOB_DONE)]
        indexes = [
            # The reaper: pending rows by status and claim age.
            models.Index(
                fields=["status", "claimed_at"], condition=models.Q(status__in=PENDING), name="drillrun_pending_idx"
            ),
            # The learner's run rate limit: WHERE user = ? AND queued_at > ? ORDER BY queued_at DESC.
            models.Index(fields=["user", "-queued_at"], name="drillrun_user_queued_idx"),
        ]

    def __str__(self) -> str:
        return f"run {self.uuid} of {self.drill_id}: {self.status}"


class Counterexample(Job):
    """An input a submission's code gets wrong, looked for after a verdict whose examples all passed and whose
    hidden cases did not (``graders.kinds.counterexamples``), on fresh seeds, never the submission's hidden one.

    Queued in the verdict's transaction and run after it, so the verdict never waits for it; ``result`` holds
    what was found (``graders.drills.counterexample.Counterexample``: the input as "Run" arguments, "Run"'s report
    on it) or why nothing was.
    """

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="counterexample")
    status = models.CharField(max_length=16, choices=JOB_STATUSES, default=Status.QUEUED.value)
    result = models.JSONField(null=True, blank=True, help_text="The input found and Run's report on it, or why none.")

    class Meta:
        constraints = [*job_constraints("counterexample", JOB_DONE)]
        indexes = [
            # The reaper: pending rows by status and claim age.
            models.Index(
                fields=["status", "claimed_at"],
                condition=models.Q(status__in=PENDING),
                name="counterexample_pending_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"counterexample for {self.submission_id}: {self.status}"

    @property
    def found(self) -> bool:
        return bool(self.status == Status.DONE and self.result and self.result.get("found"))


class DrillDraft(models.Model):
    """A drill a course's editor is writing: its drill-file text, kept between requests, and its last check.

    Learners never see a draft and nothing grades against it; publishing (``graders.authoring.drafts.publish``)
    turns a checked text into the course's ``Drill``. ``checked_text`` and ``check_report`` are the last
    finished check's (exactly the text it ran on, and what happened), written in that check's finishing
    transaction: a draft may be published only while they are a passing check of exactly ``text``.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False, help_text="The public id.")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="drill_drafts")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", help_text="Who saved it last."
    )
    slug = models.CharField(max_length=120, blank=True, help_text="The text's slug when it last parsed (for lists).")
    text = models.TextField(help_text="The drill file's TOML, as the editor last saved it.")
    checked_text = models.TextField(blank=True, help_text="Exactly the text the last finished check ran on.")
    check_report = models.JSONField(null=True, blank=True, help_text="The last finished check's report.")
    last_check = models.ForeignKey("DrillCheck", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # A course's drafts, newest first (the drills page): WHERE course = ? ORDER BY updated_at DESC.
            models.Index(fields=["course", "-updated_at"], name="drilldraft_course_idx"),
        ]

    def __str__(self) -> str:
        return f"draft {self.slug or self.uuid} of {self.course_id}"

    @property
    def checked(self) -> bool:
        """The last finished check ran on exactly the current text."""
        return self.check_report is not None and self.checked_text == self.text

    @property
    def passed(self) -> bool:
        """... and everything in it passed: what publishing asks for."""
        return self.checked and bool((self.check_report or {}).get("passed"))


class DrillCheck(Job):
    """One "Check" of a draft's text, run by a worker (``graders.kinds.checks``): the reference on every case
    for two seeds, each known-wrong solution and each alternative, through the sandbox like any submission.

    ``text`` is the draft's text when the check was asked for, so a later edit never mixes into its report;
    ``sandbox_ms`` is how long it held a sandbox runner, what a course's hourly budget counts.
    """

    draft = models.ForeignKey(DrillDraft, on_delete=models.CASCADE, related_name="checks")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    text = models.TextField()
    status = models.CharField(
        max_length=16, choices=translated_choices((*PENDING, *JOB_DONE)), default=Status.QUEUED.value
    )
    report = models.JSONField(null=True, blank=True, help_text="What each item of the check did (CheckReport).")
    sandbox_ms = models.PositiveIntegerField(default=0, help_text="Time the check held a sandbox runner.")

    class Meta:
        constraints = [*job_constraints("drillcheck", JOB_DONE)]
        indexes = [
            # The reaper: pending rows by status and claim age.
            models.Index(
                fields=["status", "claimed_at"], condition=models.Q(status__in=PENDING), name="drillcheck_pending_idx"
            ),
            # A course's checks in the last hour (the budget): WHERE course = ? AND queued_at > ?.
            models.Index(fields=["course", "queued_at"], name="drillcheck_course_idx"),
            # A draft's latest check (the editor page): WHERE draft = ? ORDER BY queued_at DESC.
            models.Index(fields=["draft", "-queued_at"], name="drillcheck_draft_idx"),
        ]

    def __str__(self) -> str:
        return f"check {self.pk} of draft {self.draft_id}: {self.status}"


class DrillRevision(models.Model):
    """One published text of a course's drill, kept for good: a submission's ``drill_version`` names the text
    it was graded against (``version`` here), and a revision can always show it. ``number`` counts them."""

    drill = models.ForeignKey(Drill, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField(help_text="1 for the first published text, then 2, 3...")
    version = models.CharField(max_length=64, help_text="The text's hash, as Drill.version and drill_version.")
    definition = models.TextField(help_text="The drill file's text as published.")
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    published_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["drill", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["drill", "number"], name="drillrevision_drill_number_unique"),
        ]
        indexes = [
            # The text a submission was graded against: WHERE drill = ? AND version = ?.
            models.Index(fields=["drill", "version"], name="drillrevision_version_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.drill_id} revision {self.number}"


class DrillDifficulty(models.Model):
    """A drill's difficulty as learners' first attempts show it: the last nightly Rasch fit
    (``graders.difficulty.refit``), beside the label its author wrote (``Drill.difficulty``).

    ``band`` and ``disagreement`` are set only once the drill has ``DIFFICULTY_MIN_ATTEMPTS`` first attempts
    (bench/difficulty.py: fewer do not rank drills reliably); below that the row keeps the fit and the counts.
    """

    class Disagreement(models.IntegerChoices):
        EASIER = -1, _("easier than its label")
        AGREES = 0, _("agrees with its label")
        HARDER = 1, _("harder than its label")

    drill = models.OneToOneField(Drill, on_delete=models.CASCADE, related_name="fitted_difficulty")
    difficulty = models.FloatField(help_text="Logits: higher is harder, 0 is a typical drill.")
    standard_error = models.FloatField(help_text="Of the difficulty, in logits.")
    attempts = models.PositiveIntegerField(help_text="Learners whose first graded attempt the fit used.")
    passed = models.PositiveIntegerField(help_text="Of those, the first attempts that were accepted.")
    quantile = models.FloatField(
        null=True, blank=True, help_text="Its place among the drills with enough attempts, 0 easiest to 1 hardest."
    )
    band = models.CharField(
        max_length=8, choices=Difficulty.choices, blank=True, help_text="The fitted tertile, as a label."
    )
    disagreement = models.SmallIntegerField(choices=Disagreement.choices, default=Disagreement.AGREES)
    fitted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(passed__lte=models.F("attempts")), name="drilldifficulty_passed"),
            models.CheckConstraint(
                condition=models.Q(band="") | models.Q(band__in=Difficulty.values), name="drilldifficulty_band_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(disagreement__in=[-1, 0, 1]), name="drilldifficulty_disagreement_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.drill_id} difficulty {self.difficulty:.2f} ({self.attempts} attempts)"

    @property
    def shown(self) -> bool:
        """Enough first attempts for the hub to show the fit (works on an unsaved row: no query)."""
        return self.band != ""


class LearnerSkill(models.Model):
    """A learner's skill on drills as their first attempts show it, from the same nightly Rasch fit as the drills'
    ``DrillDifficulty`` rows (``fitted_at`` is that fit's). Private to the learner: the hub and the API read only
    the requesting learner's row, to say how likely they are to solve a drill they have not tried on the first try.
    """

    MIN_ATTEMPTS = 5  # below this the skill is mostly the prior's middle, and "your chance" would say little

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drill_skill")
    skill = models.FloatField(help_text="Logits, on the drills' scale: 0 solves a typical drill half the time.")
    attempts = models.PositiveIntegerField(help_text="Drills whose first graded attempt the fit used.")
    passed = models.PositiveIntegerField(help_text="Of those, the first attempts that were accepted.")
    fitted_at = models.DateTimeField(help_text="The refit this came from, the same as its drills' rows.")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(passed__lte=models.F("attempts")), name="learnerskill_passed"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} skill {self.skill:.2f} ({self.attempts} attempts)"

    @property
    def shown(self) -> bool:
        """Enough first attempts to speak of the learner's chances (no query)."""
        return self.attempts >= self.MIN_ATTEMPTS

    @classmethod
    def shown_for(cls, user: Any) -> LearnerSkill | None:
        """The learner's own row from the last refit, once shown (one query): the hub's and the API's only reader."""
        row = cls.objects.filter(user_id=user.pk).first()
        return row if row is not None and row.shown else None

    def first_try_chance(self, drill: DrillDifficulty) -> float:
        """The Rasch model's chance that this learner's first attempt at that drill is accepted, 0 to 1."""
        return 1.0 / (1.0 + math.exp(drill.difficulty - self.skill))
