"""Drills (read), their hints (open the next one) and your submissions (create, read).

A drill is served without its reference solution, its stored definition or its hidden cases.
A submission is made by `graders.attempts.submissions.submit`, the same use case as the drill page: the
code's size, the learner's rate limit (429 with `Retry-After`), the seed of the learner's current
review of the drill (so a drill solved here rates its card exactly as on the page), then a QUEUED row
handed to the grading workers once it is committed; poll `GET /api/v1/submissions/<uuid>/` for the
verdict. Other learners' submissions are 404.

A "Run" (`POST /api/v1/runs/`) is `graders.attempts.runs.request_run`, the drill page's Run button: your
code and the reference on arguments you write in the case language (checked here, evaluated only in the
sandbox), with its own rate limit; never graded. Poll `GET /api/v1/runs/<uuid>/` for both outputs.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.permissions import IsOwner
from api.schema import error
from api.serializers import (
    SLUG_PATTERN,
    DrillHintsSerializer,
    DrillRunCreateSerializer,
    DrillRunSerializer,
    DrillSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
    query_bool,
    query_slug,
)
from api.throttling import UserThrottle
from graders.attempts import actions, runs, submissions
from graders.models import Drill, DrillRun, LearnerSkill, Submission

# Everything a learner may see of a drill; reference_code stays in the database.
DRILL_FIELDS = (
    "slug",
    "title",
    "prompt_zh",
    "prompt_en",
    "entry_point",
    "starter_code",
    "device",
    "limits",
    "difficulty",
)
FITTED_FIELDS = tuple(
    f"fitted_difficulty__{name}"
    for name in ("band", "difficulty", "standard_error", "attempts", "passed", "disagreement", "fitted_at")
)


def _drills(user: Any) -> QuerySet[Drill]:
    """The active drills of the courses ``user`` may read."""
    return (
        Drill.objects.active()
        .visible_to(user)
        .select_related("card__note", "fitted_difficulty")
        .only(*DRILL_FIELDS, "version", "definition", "source_path", "card__uuid", "card__note__slug", *FITTED_FIELDS)
        .order_by("slug")
    )


class _DrillsView(generics.GenericAPIView):
    """Drills for the requester, with the requester's own fitted skill in the serializer's context (one query)."""

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "skill": LearnerSkill.shown_for(self.request.user)}


class DrillList(_DrillsView, generics.ListAPIView):
    """Every active drill."""

    serializer_class = DrillSerializer

    def get_queryset(self) -> QuerySet[Drill]:
        return _drills(self.request.user)


class DrillDetail(_DrillsView, generics.RetrieveAPIView):
    """One active drill."""

    serializer_class = DrillSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Drill]:
        return _drills(self.request.user)


class DrillHints(generics.GenericAPIView):
    """`POST`: open the next hint of your current review of the drill, as "Show hint" on the drill page does.

    Each hint opened caps an acceptance in this review (one at 4, two or more at 3; docs/scheduling.md). With
    every hint open already, or the review rated, it opens nothing and answers what you see.
    """

    serializer_class = DrillHintsSerializer

    @extend_schema(request=None, responses={200: DrillHintsSerializer, 404: error("No such drill.")})
    def post(self, request: Request, slug: str) -> Response:
        drill = _drills(request.user).filter(slug=slug).first()
        if drill is None:
            raise NotFound(_("No such drill."))
        hints = actions.open_hint(request.user, drill)
        data = {
            "hint_count": hints.total,
            "opened": [{"en": hint.en, "zh": hint.zh} for hint in hints.shown],
            "rating_cap": hints.rating_cap,
        }
        return Response(DrillHintsSerializer(data).data)


class SubmissionList(generics.ListCreateAPIView):
    """`GET`: your submissions, newest first (`?drill=<slug>` filters). `POST`: submit code."""

    serializer_class = SubmissionSerializer
    throttle_classes = [UserThrottle]

    def get_queryset(self) -> QuerySet[Submission]:
        subs = Submission.objects.filter(user=self.request.user).select_related("drill", "counterexample")
        subs = subs.order_by("-queued_at", "-pk")
        drill = query_slug(self.request.query_params, "drill")
        if drill is not None:
            subs = subs.filter(drill__slug=drill)
        return subs

    @extend_schema(
        parameters=[OpenApiParameter("drill", str, pattern=SLUG_PATTERN, description="Only submissions to this drill.")]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=SubmissionCreateSerializer,
        parameters=[
            OpenApiParameter(
                "wait",
                bool,
                description="Wait for the verdict (at most a second or two, the server's cap) and answer with it; "
                "a `status` still `queued` or `running` means it was not ready by then: poll the submission.",
            )
        ],
        responses={201: SubmissionSerializer, 404: error("No such drill (or it was retired).")},
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        wait = query_bool(request.query_params, "wait")
        serializer = SubmissionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        drill = _drills(request.user).filter(slug=data["drill"]).first()
        if drill is None:
            raise NotFound(_("No such drill."))
        done = actions.submit(request.user, drill, data["code"], data["kind"], wait=wait)
        if isinstance(done, submissions.Refused):
            if done.status == status.HTTP_429_TOO_MANY_REQUESTS:
                raise Throttled(wait=done.retry_after, detail=done.message)
            raise ValidationError({"code": [done.message]})
        return Response(SubmissionSerializer(done.submission).data, status=status.HTTP_201_CREATED)


class SubmissionDetail(generics.RetrieveAPIView):
    """One of your submissions, with its verdict once graded."""

    serializer_class = SubmissionSerializer
    lookup_field = "uuid"
    permission_classes = [*generics.RetrieveAPIView.permission_classes, IsOwner]

    def get_queryset(self) -> QuerySet[Submission]:
        return Submission.objects.filter(user=self.request.user).select_related("drill", "counterexample")


class RunCreate(generics.CreateAPIView):
    """`POST`: run your code and the drill's reference on your own arguments (never graded, not an attempt)."""

    serializer_class = DrillRunSerializer
    throttle_classes = [UserThrottle]

    @extend_schema(
        request=DrillRunCreateSerializer,
        parameters=[
            OpenApiParameter(
                "wait",
                bool,
                description="Wait for the run (at most a second or two, the server's cap) and answer with it; "
                "a `status` still `queued` or `running` means it was not ready by then: poll the run.",
            )
        ],
        responses={201: DrillRunSerializer, 404: error("No such drill (or it was retired).")},
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        wait = query_bool(request.query_params, "wait")
        serializer = DrillRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        drill = _drills(request.user).filter(slug=data["drill"]).first()
        if drill is None:
            raise NotFound(_("No such drill."))
        run = runs.request_run(request.user, drill, data["code"], data["arguments"])
        if isinstance(run, submissions.Refused):
            if run.status == status.HTTP_429_TOO_MANY_REQUESTS:
                raise Throttled(wait=run.retry_after, detail=run.message)
            raise ValidationError({run.field: [run.message]})
        if wait:
            run = runs.wait_for_run(run)
        return Response(DrillRunSerializer(run).data, status=status.HTTP_201_CREATED)


class RunDetail(generics.RetrieveAPIView):
    """One of your runs, with both outputs once done."""

    serializer_class = DrillRunSerializer
    lookup_field = "uuid"
    permission_classes = [*generics.RetrieveAPIView.permission_classes, IsOwner]

    def get_queryset(self) -> QuerySet[DrillRun]:
        return DrillRun.objects.filter(user=self.request.user).select_related("drill")
