"""Your teams and their leaderboards. Members only: a team you are not in is 404, never 403,
so its existence, members and board stay private (as on the web pages)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import LeaderboardSerializer, TeamDetailSerializer, TeamSerializer
from teams import boards
from teams.models import Membership, Team

PERIODS = ("week", "all")


def _my_memberships(request: Request) -> QuerySet[Membership]:
    """The requester's memberships with their team and its member count (one query)."""
    members = Membership.objects.filter(team=OuterRef("team")).order_by().values("team").annotate(n=Count("pk"))
    return (
        Membership.objects.filter(user_id=request.user.pk)
        .select_related("team")
        .annotate(members=Subquery(members.values("n")[:1]))
        .order_by("team__name", "team__pk")
    )


def _team_for_member(request: Request, slug: str) -> Team:
    """The team when the requester belongs to it; 404 for everyone else."""
    team = Team.objects.filter(slug=slug, memberships__user_id=request.user.pk).first()
    if team is None:
        raise NotFound("No such team.")
    return team


class TeamList(generics.ListAPIView):
    """The teams you belong to."""

    serializer_class = TeamSerializer

    def get_queryset(self) -> QuerySet[Membership]:
        return _my_memberships(self.request)


class TeamDetail(APIView):
    """One of your teams, with its members."""

    @extend_schema(responses=TeamDetailSerializer)
    def get(self, request: Request, slug: str) -> Response:
        team = _team_for_member(request, slug)
        members = list(team.memberships.select_related("user").order_by("joined_at", "pk"))
        role = next(m.role for m in members if m.user_id == request.user.pk)
        body: dict[str, Any] = {
            "slug": team.slug,
            "name": team.name,
            "time_zone": team.time_zone,
            "role": role,
            "members": len(members),
            "season": boards.team_season(team, timezone.now()),
            "member_list": [{"username": m.user.username, "role": m.role, "joined_at": m.joined_at} for m in members],
        }
        return Response(TeamDetailSerializer(body).data)


class Leaderboard(APIView):
    """The team's board: this week's season (`?period=week`, the default) or all time."""

    @extend_schema(
        parameters=[OpenApiParameter("period", str, enum=list(PERIODS), description="week (default) or all.")],
        responses=LeaderboardSerializer,
    )
    def get(self, request: Request, slug: str) -> Response:
        period = request.query_params.get("period", "week")
        if period not in PERIODS:
            raise ValidationError({"period": ["Must be week or all."]})
        team = _team_for_member(request, slug)
        entries = boards.team_board(team, period, me=request.user.pk)
        rows = [
            {
                "rank": e.rank,
                "username": e.name,
                "is_you": e.is_you,
                "xp": e.row.xp,
                "reviews": e.row.reviews,
                "retention": e.row.retention,
                "drills_first_try": e.row.drills_first_try,
                "streak": e.row.streak,
                "score": e.row.score,
            }
            for e in entries
        ]
        return Response(LeaderboardSerializer({"team": team.slug, "period": period, "entries": rows}).data)
