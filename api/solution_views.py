"""A drill's accepted solutions grouped by normalised code, and a team teacher's comment on a group (issue 41).

The same use cases as the solutions page (``teams.solutions``): closed (403) until you solved the drill, gave up or
viewed its reference (a team's owner or editor sees them to comment on); a drill you may not read, a team you do not
teach or a group your team has no solution in is a 404; so is a comment that is not your own, for a team you still
teach, when you edit or delete it.
"""

from __future__ import annotations

from uuid import UUID

from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import error
from api.solution_serializers import (
    DrillSolutionsSerializer,
    SolutionCommentCreateSerializer,
    SolutionCommentEditSerializer,
    SolutionCommentSerializer,
)
from graders.models import Drill
from teams import solutions


def _drill(request: Request, slug: str) -> Drill:
    drill = Drill.objects.active().visible_to(request.user).select_related("card__note").filter(slug=slug).first()
    if drill is None:
        raise NotFound(_("No such drill."))
    return drill


class DrillSolutions(generics.GenericAPIView):
    """`GET`: the drill's accepted solutions grouped by normalised code, largest group first, the reference's
    group marked, with your teams' teachers' comments on each group."""

    serializer_class = DrillSolutionsSerializer

    @extend_schema(
        responses={
            200: DrillSolutionsSerializer,
            403: error("Solutions open once you have solved the drill, given up on it or viewed its reference."),
            404: error("No such drill."),
        }
    )
    def get(self, request: Request, slug: str) -> Response:
        page = solutions.solutions_page(request.user, _drill(request, slug))
        if not page.open:
            raise PermissionDenied(
                _("Solutions open once you have solved this drill, given up on it or looked at its reference.")
            )
        return Response(DrillSolutionsSerializer({"site_wide": page.site_wide, "groups": page.groups}).data)


class SolutionCommentCreate(generics.GenericAPIView):
    """`POST`: comment on a group of the drill's solutions for a team you own or edit; every member of that team
    whose accepted code falls in the group reads it, those who solve the drill later too."""

    serializer_class = SolutionCommentCreateSerializer

    @extend_schema(
        request=SolutionCommentCreateSerializer,
        responses={201: SolutionCommentSerializer, 404: error("No such drill, team or group.")},
    )
    def post(self, request: Request, slug: str) -> Response:
        drill = _drill(request, slug)
        incoming = SolutionCommentCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            made = solutions.add_comment(request.user, drill, data["key"], data["team"], data["text"])
        except solutions.SolutionError as exc:
            raise NotFound(_("No such group of solutions.")) from exc
        return Response(SolutionCommentSerializer(made).data, status=status.HTTP_201_CREATED)


class SolutionCommentDetail(generics.GenericAPIView):
    """`PATCH`: new text for your own comment (its readers see it, marked edited); `DELETE`: remove it. Only its
    author, while an owner or editor of its team; anyone else gets a 404, as for a comment that does not exist."""

    serializer_class = SolutionCommentEditSerializer

    @extend_schema(
        request=SolutionCommentEditSerializer,
        responses={200: SolutionCommentSerializer, 404: error("No such comment.")},
    )
    def patch(self, request: Request, slug: str, comment: UUID) -> Response:
        drill = _drill(request, slug)
        incoming = SolutionCommentEditSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            edited = solutions.edit_comment(
                request.user, drill, comment, incoming.validated_data["text"], timezone.now()
            )
        except solutions.SolutionError as exc:
            raise NotFound(_("No such comment.")) from exc
        return Response(SolutionCommentSerializer(edited).data)

    @extend_schema(request=None, responses={204: None, 404: error("No such comment.")})
    def delete(self, request: Request, slug: str, comment: UUID) -> Response:
        drill = _drill(request, slug)
        try:
            solutions.delete_comment(request.user, drill, comment)
        except solutions.SolutionError as exc:
            raise NotFound(_("No such comment.")) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
