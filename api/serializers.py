"""What the API reads and writes. Public ids only: deck and drill slugs, card, submission and team
UUIDs or slugs, usernames; never an integer primary key. Nothing here exposes a drill's reference
solution, its definition or its hidden cases, nor any other learner's state, code or reviews."""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import authenticate
from django.core.validators import RegexValidator
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import AuthenticationFailed

from cards.models import Card, CardState, Note, ReviewLog
from cards.scheduling.sm2 import Rating
from graders.drills.schema import ARGUMENTS_CHARS, DrillError, parse_drill
from graders.models import Counterexample, Drill, DrillDifficulty, DrillRun, LearnerSkill, Submission

# DRF refuses NUL in text anyway; the validator also puts the rule in the schema (as a pattern),
# so clients and schemathesis know it. Slug-shaped query parameters keep NUL away from the database.
NO_NUL = RegexValidator(r"^[^\x00]*$", gettext_lazy("Null characters are not allowed."))
SLUG_PATTERN = r"^[-a-zA-Z0-9_]+$"
MAX_CODE_CHARS = 50_000  # the sandbox's own limit is per drill (20 kB by default); this stops abuse early
MAX_DURATION_MS = 24 * 3600 * 1000


def query_slug(params: Any, name: str) -> str | None:
    """A slug-shaped query parameter (`?deck=`, `?drill=`), or None when absent; anything else is a 400."""
    value = params.get(name)
    if value is None:
        return None
    try:
        return str(serializers.SlugField(max_length=120).run_validation(value))
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({name: exc.detail}) from None


def query_bool(params: Any, name: str) -> bool:
    """A true/false query parameter (`?wait=true`), false when absent; anything but a boolean is a 400."""
    value = params.get(name)
    if value is None:
        return False
    try:
        return bool(serializers.BooleanField().run_validation(value))
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({name: exc.detail}) from None


class StrictUUIDField(serializers.UUIDField):
    """A UUID given as a string only: DRF's own field would take the number 0 (or `false`) as a UUID."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


# ------------------------------------------------------------------------------------------- auth


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150, validators=[NO_NUL])
    password = serializers.CharField(
        max_length=4096, trim_whitespace=False, style={"input_type": "password"}, validators=[NO_NUL]
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Wrong credentials are a 401 (`authentication_failed`), not a 400: the request itself was well formed."""
        user = authenticate(self.context.get("request"), username=attrs["username"], password=attrs["password"])
        if user is None or not user.is_active:
            raise AuthenticationFailed(gettext_lazy("Unable to sign in with these credentials."))
        attrs["user"] = user
        return attrs


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")


# ------------------------------------------------------------------------------------- decks, cards


class DeckSerializer(serializers.ModelSerializer):
    active_cards = serializers.IntegerField(read_only=True, help_text="Active cards in the deck.")

    class Meta:
        model = Note
        fields = ["slug", "title", "path", "imported_at", "active_cards"]


class CardStateSerializer(serializers.ModelSerializer):
    """The requester's own SM-2 state for a card."""

    class Meta:
        model = CardState
        fields = [
            "easiness",
            "interval",
            "repetitions",
            "due",
            "lapses",
            "suspended",
            "buried_until",
            "last_reviewed_at",
            "needs_repeat",
            "version",
            "user_note",
        ]


class CardSerializer(serializers.ModelSerializer):
    deck = serializers.SlugRelatedField(source="note", slug_field="slug", read_only=True)

    class Meta:
        model = Card
        fields = [
            "uuid",
            "deck",
            "kind",
            "front",
            "back",
            "front_html",
            "back_html",
            "heading_path",
            "anchor",
            "tags",
            "position",
            "active",
        ]


class CardDetailSerializer(CardSerializer):
    state = serializers.SerializerMethodField(help_text="Your SM-2 state; null while the card is new to you.")

    class Meta(CardSerializer.Meta):
        fields = [*CardSerializer.Meta.fields, "state"]

    @extend_schema_field(CardStateSerializer(allow_null=True))
    def get_state(self, card: Card) -> dict[str, Any] | None:
        state = self.context.get("state")
        return CardStateSerializer(state).data if state is not None else None


class ReviewCardSerializer(serializers.ModelSerializer):
    """A card as the review queue shows it: the rendered sides, not the markdown sources."""

    deck = serializers.SlugRelatedField(source="note", slug_field="slug", read_only=True)

    class Meta:
        model = Card
        fields = ["uuid", "deck", "kind", "front_html", "back_html", "heading_path", "anchor", "tags"]


# ------------------------------------------------------------------------------------------ reviews


class RatingButtonSerializer(serializers.Serializer):
    rating = serializers.IntegerField(help_text="The SM-2 quality to send as `quality`.")
    label = serializers.CharField()
    key = serializers.IntegerField(help_text="The keyboard key the web page uses.")
    hint = serializers.CharField(help_text="The interval this rating would give, e.g. 6d.")


class QueueCountsSerializer(serializers.Serializer):
    due = serializers.IntegerField()
    new = serializers.IntegerField()
    repeats = serializers.IntegerField()
    reviewed_today = serializers.IntegerField()
    remaining = serializers.IntegerField()


class NextCardSerializer(serializers.Serializer):
    """The head of today's queue. ``card`` is null when nothing is left for today."""

    today = serializers.DateField(help_text="Your learner day (your time zone, your day start hour).")
    card = ReviewCardSerializer(allow_null=True)
    queue = serializers.ChoiceField(choices=["due", "new", "repeat"], allow_null=True)
    version = serializers.IntegerField(allow_null=True, help_text="Send it back with the rating.")
    user_note = serializers.CharField(allow_null=True, allow_blank=True)
    buttons = RatingButtonSerializer(many=True)
    counts = QueueCountsSerializer()


class ReviewCreateSerializer(serializers.Serializer):
    card = StrictUUIDField(help_text="The card's uuid, from GET /api/v1/review/next/.")
    quality = serializers.ChoiceField(
        choices=[int(r) for r in Rating], help_text="1 Again, 3 Hard, 4 Good, 5 Easy (the SM-2 quality)."
    )
    version = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, help_text="The version the queue gave with the card; a replay of it is 409."
    )
    duration_ms = serializers.IntegerField(min_value=0, max_value=MAX_DURATION_MS, default=0)


class ReviewLogSerializer(serializers.ModelSerializer):
    """One of your reviews (append-only history)."""

    card = serializers.SlugRelatedField(slug_field="uuid", read_only=True)

    class Meta:
        model = ReviewLog
        fields = [
            "card",
            "quality",
            "duration_ms",
            "reviewed_at",
            "review_day",
            "source",
            "was_new",
            "is_same_day_repeat",
            "easiness_before",
            "interval_before",
            "repetitions_before",
            "due_before",
            "easiness_after",
            "interval_after",
            "repetitions_after",
            "due_after",
        ]


class ReviewResultSerializer(serializers.Serializer):
    card = serializers.UUIDField()
    outcome = serializers.CharField(help_text="Always `recorded`; a duplicate or a card not in the queue is 409.")
    state = CardStateSerializer()


# ------------------------------------------------------------------------------------------- drills


class DrillExampleSerializer(serializers.Serializer):
    name = serializers.CharField()
    args = serializers.ListField(child=serializers.CharField(), help_text="Python expressions for the arguments.")


@functools.lru_cache(maxsize=512)
def visible_examples(version: str, definition: str, source_path: str) -> tuple[dict[str, Any], ...]:
    """The drill's fixed examples (the ones the learner is shown), parsed once per drill version."""
    try:
        spec = parse_drill(definition, source_path)
    except DrillError:
        return ()
    return tuple({"name": case.name, "args": list(case.args)} for case in spec.examples)


class FittedDifficultySerializer(serializers.ModelSerializer):
    """A drill's difficulty as learners' first attempts show it (the last nightly Rasch fit)."""

    class Meta:
        model = DrillDifficulty
        fields = ["band", "difficulty", "standard_error", "attempts", "passed", "disagreement", "fitted_at"]
        extra_kwargs = {
            "band": {"help_text": "The fitted third among the drills with enough attempts, as a label."},
            "disagreement": {"help_text": "-1: surely easier than its label; 1: surely harder; 0: agrees."},
        }


class LearnerSkillSerializer(serializers.ModelSerializer):
    """Your skill on drills from your first attempts (the same nightly fit as the drills'); only you see it."""

    class Meta:
        model = LearnerSkill
        fields = ["skill", "attempts", "passed", "fitted_at"]


class DrillSerializer(serializers.ModelSerializer):
    """A drill as a learner sees it: the prompt, starter code and visible examples; never the reference,
    the stored definition or the hidden cases."""

    card = serializers.SlugRelatedField(slug_field="uuid", read_only=True)
    deck = serializers.SlugRelatedField(source="card.note", slug_field="slug", read_only=True)
    examples = serializers.SerializerMethodField()
    hint_count = serializers.SerializerMethodField(
        help_text="How many hints the drill offers (at most 3); each one opened on the drill page caps the rating."
    )
    difficulty = serializers.ChoiceField(
        choices=Drill._meta.get_field("difficulty").choices, read_only=True, help_text="The label its author wrote."
    )
    fitted_difficulty = serializers.SerializerMethodField(
        help_text="The difficulty learners' first attempts show; null until the drill has enough of them."
    )
    your_first_try_chance = serializers.SerializerMethodField(
        help_text="Your chance (0 to 1) that a first attempt at this drill is accepted, from your fitted skill and "
        "the drill's fitted difficulty; null until both are fitted from enough first attempts."
    )

    class Meta:
        model = Drill
        fields = [
            "slug",
            "title",
            "difficulty",
            "fitted_difficulty",
            "your_first_try_chance",
            "prompt_zh",
            "prompt_en",
            "entry_point",
            "starter_code",
            "device",
            "limits",
            "card",
            "deck",
            "examples",
            "hint_count",
        ]

    @extend_schema_field(DrillExampleSerializer(many=True))
    def get_examples(self, drill: Drill) -> list[dict[str, Any]]:
        return list(visible_examples(drill.version, drill.definition, drill.source_path))

    def get_hint_count(self, drill: Drill) -> int:
        return len(drill.spec.hints)

    @staticmethod
    def _fitted(drill: Drill) -> DrillDifficulty | None:
        row: DrillDifficulty | None = getattr(drill, "fitted_difficulty", None)
        return row if row is not None and row.shown else None

    @extend_schema_field(FittedDifficultySerializer(allow_null=True))
    def get_fitted_difficulty(self, drill: Drill) -> dict[str, Any] | None:
        fitted = self._fitted(drill)
        return FittedDifficultySerializer(fitted).data if fitted is not None else None

    @extend_schema_field(serializers.FloatField(allow_null=True, min_value=0, max_value=1))
    def get_your_first_try_chance(self, drill: Drill) -> float | None:
        skill: LearnerSkill | None = self.context.get("skill")  # the requester's own (``LearnerSkill.shown_for``)
        fitted = self._fitted(drill)
        return round(skill.first_try_chance(fitted), 3) if skill is not None and fitted is not None else None


class HintSerializer(serializers.Serializer):
    en = serializers.CharField()
    zh = serializers.CharField()


class DrillHintsSerializer(serializers.Serializer):
    """The hints you see in your current review of a drill (every one once the review is rated)."""

    hint_count = serializers.IntegerField(help_text="How many hints the drill offers.")
    opened = HintSerializer(many=True, help_text="The hints open to you, in order.")
    rating_cap = serializers.IntegerField(
        help_text="The best SM-2 quality an acceptance in this review can get after the hints opened (5, 4 or 3)."
    )


# -------------------------------------------------------------------------------------- submissions


class CounterexampleSerializer(serializers.ModelSerializer):
    """An input your code gets wrong, found on new random cases after an attempt that failed hidden cases only
    (never a hidden case). ``arguments`` is the text to send to ``POST /api/v1/runs/``; ``result.run`` is that
    run's report (``expected``, ``actual``, ``mismatch``); ``found`` false with ``reason`` when none was found."""

    found = serializers.BooleanField(read_only=True)
    arguments = serializers.SerializerMethodField()

    class Meta:
        model = Counterexample
        fields = ["status", "found", "arguments", "result", "queued_at", "finished_at"]

    def get_arguments(self, obj: Counterexample) -> str:
        return str((obj.result or {}).get("arguments") or "")


class SubmissionSerializer(serializers.ModelSerializer):
    """One of your submissions. ``verdict`` is the grader's, with hidden cases already redacted. ``counterexample``
    is null unless the attempt passed every example and failed a hidden case: then it follows the verdict."""

    drill = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    started_at = serializers.DateTimeField(source="claimed_at", read_only=True, allow_null=True)
    counterexample = serializers.SerializerMethodField()

    @extend_schema_field(CounterexampleSerializer(allow_null=True))
    def get_counterexample(self, obj: Submission) -> dict[str, Any] | None:
        try:
            found = obj.counterexample
        except Counterexample.DoesNotExist:
            return None
        return dict(CounterexampleSerializer(found).data)

    class Meta:
        model = Submission
        fields = [
            "uuid",
            "drill",
            "kind",
            "status",
            "code",
            "verdict",
            "queued_at",
            "started_at",
            "finished_at",
            "grading_ms",
            "device",
            "counterexample",
        ]


class SubmissionCreateSerializer(serializers.Serializer):
    drill = serializers.SlugField(max_length=120, help_text="The drill's slug; an unknown one is 404.")
    code = serializers.CharField(max_length=MAX_CODE_CHARS, trim_whitespace=False, validators=[NO_NUL])
    kind = serializers.ChoiceField(
        choices=Submission.Kind.choices,
        default=Submission.Kind.SUBMIT,
        help_text="`examples` grades the visible examples only and is not an attempt.",
    )


class DrillRunSerializer(serializers.ModelSerializer):
    """One of your "Run"s: your code and the reference on your arguments. ``result`` (once ``done``) holds both
    outputs (``expected``, ``actual``), whether they match (``same``) and the diff (``mismatch``, as a verdict's)."""

    drill = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    started_at = serializers.DateTimeField(source="claimed_at", read_only=True, allow_null=True)
    arguments = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = DrillRun
        fields = ["uuid", "drill", "status", "code", "arguments", "result", "queued_at", "started_at", "finished_at"]


class DrillRunCreateSerializer(serializers.Serializer):
    drill = serializers.SlugField(max_length=120, help_text="The drill's slug; an unknown one is 404.")
    code = serializers.CharField(max_length=MAX_CODE_CHARS, trim_whitespace=False, validators=[NO_NUL])
    arguments = serializers.CharField(
        max_length=ARGUMENTS_CHARS,
        allow_blank=True,
        trim_whitespace=False,
        validators=[NO_NUL],
        help_text="The arguments as in `entry_point(<arguments>)`: case expressions (`torch`, `math`, `g`, `rng`...) "
        "separated by commas, evaluated only in the sandbox; checked after the drill is found (an unknown one is 404).",
    )


# ------------------------------------------------------------------------------------------ teams


class TeamSerializer(serializers.Serializer):
    """A team seen through your membership of it (the list reads Membership rows with their team)."""

    slug = serializers.SlugField(source="team.slug")
    name = serializers.CharField(source="team.name")
    time_zone = serializers.CharField(source="team.time_zone")
    role = serializers.ChoiceField(choices=["owner", "editor", "member"], help_text="Your role in the team.")
    members = serializers.IntegerField(help_text="How many members the team has.")


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=["owner", "editor", "member"])
    joined_at = serializers.DateTimeField()


class TeamDetailSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    time_zone = serializers.CharField()
    role = serializers.ChoiceField(choices=["owner", "editor", "member"], help_text="Your role in the team.")
    members = serializers.IntegerField(help_text="How many members the team has.")
    season = serializers.DateField(help_text="The Monday the current weekly season started.")
    member_list = MemberSerializer(many=True)


class BoardEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    username = serializers.CharField()
    is_you = serializers.BooleanField()
    xp = serializers.IntegerField()
    reviews = serializers.IntegerField()
    retention = serializers.FloatField(allow_null=True, help_text="True retention of mature cards, 0..1.")
    drills_first_try = serializers.IntegerField()
    streak = serializers.IntegerField()
    score = serializers.FloatField()


class LeaderboardSerializer(serializers.Serializer):
    team = serializers.SlugField()
    period = serializers.ChoiceField(choices=["week", "all"])
    entries = BoardEntrySerializer(many=True)


# ------------------------------------------------------------------------------------------ stats


class SummarySerializer(serializers.Serializer):
    seen = serializers.IntegerField()
    young = serializers.IntegerField()
    mature = serializers.IntegerField()
    suspended = serializers.IntegerField()
    due_today = serializers.IntegerField()
    active_cards = serializers.IntegerField()


class RetentionSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    young_total = serializers.IntegerField()
    young_passed = serializers.IntegerField()
    mature_total = serializers.IntegerField()
    mature_passed = serializers.IntegerField()


class ForecastSerializer(serializers.Serializer):
    day = serializers.DateField()
    count = serializers.IntegerField()


class DrillRateSerializer(serializers.Serializer):
    slug = serializers.CharField(help_text="The deck (note) slug.")
    title = serializers.CharField()
    submissions = serializers.IntegerField()
    accepted = serializers.IntegerField()
    drills = serializers.IntegerField()
    solved = serializers.IntegerField()


class StatsSerializer(serializers.Serializer):
    today = serializers.DateField()
    streak = serializers.IntegerField(help_text="Consecutive learner days with a review.")
    reviews_last_90_days = serializers.IntegerField()
    summary = SummarySerializer()
    queue = QueueCountsSerializer()
    retention = RetentionSerializer(many=True)
    forecast = ForecastSerializer(many=True)
    drills = DrillRateSerializer(many=True)
    drill_skill = LearnerSkillSerializer(
        allow_null=True, help_text="Your skill fitted from your first attempts; null below 5 of them."
    )
