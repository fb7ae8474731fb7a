"""Decks, cards, the review queue, reviews and stats.

Cards and decks are shared by every learner; states, review logs and stats are always filtered on
the requester. Reviews go through `cards.review.rate`: the same transaction and the same
version check as the web page, so a replayed request is recorded once and answered 409.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.exceptions import Conflict
from api.schema import error
from api.serializers import (
    SLUG_PATTERN,
    CardDetailSerializer,
    CardSerializer,
    CardStateSerializer,
    DeckSerializer,
    NextCardSerializer,
    ReviewCreateSerializer,
    ReviewLogSerializer,
    ReviewResultSerializer,
    StatsSerializer,
    StrictUUIDField,
    query_slug,
)
from cards import review as reviewing
from cards import stats as numbers
from cards.models import Card, CardState, Note, ReviewLog
from graders.models import LearnerSkill
from graders.rating.stats import drill_pass_rates

STATS_DAYS = 90
FORECAST_DAYS = 30

KIND_PARAM = OpenApiParameter("kind", str, enum=list(Card.Kind.values), description="Only cards of this kind.")
DECK_PARAM = OpenApiParameter("deck", str, pattern=SLUG_PATTERN, description="Only cards of the deck with this slug.")


class DeckList(generics.ListAPIView):
    """Every deck (one per imported note) with its number of active cards."""

    serializer_class = DeckSerializer

    def get_queryset(self) -> QuerySet[Note]:
        return (
            Note.objects.visible_to(self.request.user)
            .annotate(active_cards=Count("cards", filter=Q(cards__active=True)))
            .order_by("slug")
        )


class DeckDetail(generics.RetrieveAPIView):
    serializer_class = DeckSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Note]:
        return DeckList.get_queryset(self)


def _filter_cards(cards: QuerySet[Card], params: Any) -> QuerySet[Card]:
    """`?kind=` must be a known kind (an unknown one is a 400, not silently everything)."""
    kind = params.get("kind")
    if kind is not None:
        if kind not in Card.Kind.values:
            raise ValidationError({"kind": [_("Must be one of: %(kinds)s.") % {"kinds": ", ".join(Card.Kind.values)}]})
        cards = cards.filter(kind=kind)
    return cards


class CardList(generics.ListAPIView):
    """Active cards in deck order; filter with `?deck=<slug>` and `?kind=`."""

    serializer_class = CardSerializer

    @extend_schema(parameters=[DECK_PARAM, KIND_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Card]:
        cards = Card.objects.active().visible_to(self.request.user).select_related("note")
        cards = cards.order_by("note__slug", "position", "pk")
        deck = query_slug(self.request.query_params, "deck")
        if deck is not None:
            cards = cards.filter(note__slug=deck)
        return _filter_cards(cards, self.request.query_params)


class DeckCardList(generics.ListAPIView):
    """The active cards of one deck; `?kind=` filters."""

    serializer_class = CardSerializer

    @extend_schema(parameters=[KIND_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Card]:
        note = get_object_or_404(Note.objects.visible_to(self.request.user), slug=self.kwargs["slug"])
        cards = Card.objects.active().filter(note=note).select_related("note").order_by("position", "pk")
        return _filter_cards(cards, self.request.query_params)


class CardDetail(generics.RetrieveAPIView):
    """Any card (retired ones too, so history stays readable), with your own state."""

    serializer_class = CardDetailSerializer
    lookup_field = "uuid"

    def get_queryset(self) -> QuerySet[Card]:
        return Card.objects.visible_to(self.request.user).select_related("note")

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if "uuid" in self.kwargs:
            state = CardState.objects.filter(user=self.request.user, card__uuid=self.kwargs["uuid"]).first()
            context["state"] = state
        return context


def _counts(snap: reviewing.QueueSnapshot) -> dict[str, int]:
    return {
        "due": snap.due,
        "new": snap.new,
        "repeats": snap.repeats,
        "reviewed_today": snap.reviewed_today,
        "remaining": snap.remaining,
    }


class NextCard(APIView):
    """The next card of today's queue: due cards first, then new ones, then today's repeats."""

    @extend_schema(responses=NextCardSerializer)
    def get(self, request: Request) -> Response:
        profile = reviewing.get_profile(request.user)
        item, snap = reviewing.next_card(request.user, profile, timezone.now())
        if item is None:
            today = reviewing.learner_today(profile, timezone.now())
            body = {"today": today, "card": None, "queue": None, "version": None, "user_note": None, "buttons": []}
        else:
            body = {
                "today": item.today,
                "card": item.card,
                "queue": item.queue,
                "version": item.version,
                "user_note": item.user_note,
                "buttons": item.buttons(),
            }
        return Response(NextCardSerializer({**body, "counts": _counts(snap)}).data)


class ReviewList(generics.ListCreateAPIView):
    """`GET`: your reviews, newest first (`?card=<uuid>` filters). `POST`: rate a card."""

    serializer_class = ReviewLogSerializer

    def get_serializer_class(self) -> type:
        return ReviewCreateSerializer if self.request.method == "POST" else ReviewLogSerializer

    def get_queryset(self) -> QuerySet[ReviewLog]:
        logs = ReviewLog.objects.filter(user=self.request.user).select_related("card").order_by("-reviewed_at", "-pk")
        card = self.request.query_params.get("card")
        if card is not None:
            logs = logs.filter(card__uuid=StrictUUIDField().run_validation(card))
        return logs

    @extend_schema(parameters=[OpenApiParameter("card", OpenApiTypes.UUID, description="Only this card's reviews.")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=ReviewCreateSerializer,
        responses={
            201: ReviewResultSerializer,
            404: error("No such card, or a card whose state you do not have (version > 0)."),
            409: error(
                "already_recorded (a replay of the same version), not_in_queue (not due now) or new_limit "
                "(a new card past today's new-card limit)."
            ),
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ReviewCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rating = reviewing.RatingRequest(
            card_uuid=data["card"], quality=data["quality"], version=data["version"], duration_ms=data["duration_ms"]
        )
        outcome = reviewing.rate(request.user, reviewing.get_profile(request.user), rating, timezone.now())
        if outcome is reviewing.Outcome.NOT_FOUND:
            raise NotFound(_("No such card in your reviews."))
        if outcome is reviewing.Outcome.DUPLICATE:
            raise Conflict(_("This card was already rated with that version (a replayed request)."), "already_recorded")
        if outcome is reviewing.Outcome.NOT_IN_QUEUE:
            raise Conflict(_("This card is not in your queue now."), "not_in_queue")
        if outcome is reviewing.Outcome.NEW_LIMIT:
            raise Conflict(outcome.message, "new_limit")
        state = CardState.objects.get(user=request.user, card__uuid=data["card"])
        body = {"card": data["card"], "outcome": outcome.value, "state": CardStateSerializer(state).data}
        return Response(body, status=status.HTTP_201_CREATED)


class Stats(APIView):
    """Your numbers: card counts, streak, retention, the due forecast and drill pass rates."""

    @extend_schema(responses=StatsSerializer)
    def get(self, request: Request) -> Response:
        profile = reviewing.get_profile(request.user)
        today = reviewing.learner_today(profile, timezone.now())
        activity = numbers.daily_activity(request.user, today - timedelta(days=STATS_DAYS - 1), today)
        days = numbers.daily_counts(request.user, today - timedelta(days=reviewing.STREAK_LOOKBACK_DAYS), today)
        body = {
            "today": today,
            "streak": numbers.current_streak(days, today),
            "reviews_last_90_days": sum(a.reviews for a in activity),
            "summary": numbers.collection_summary(request.user, today),
            "queue": _counts(reviewing.queue_snapshot(request.user, profile, today)),
            "retention": numbers.retention_table(activity, today),
            "forecast": numbers.due_forecast(request.user, today, FORECAST_DAYS),
            "drills": drill_pass_rates(request.user),
            "drill_skill": LearnerSkill.shown_for(request.user),
        }
        return Response(StatsSerializer(body).data)
