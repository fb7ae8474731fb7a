"""A team's own course: its notes and drills (members read), uploads previewed and confirmed (editors).

The same use cases as the course pages (``courses.services``, ``courses.overview``): an upload is checked and
planned first, kept with its import report, and imported only by its confirmation, which answers 409 when the
course changed in between (read the upload again for the new report). Anyone outside the team gets 404, as
on the team endpoints; a member who is not an editor gets 403 on the editors' endpoints.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.course_serializers import (
    ConfirmedSerializer,
    CourseDrillSerializer,
    CourseNoteDetailSerializer,
    CourseNoteSerializer,
    CourseSerializer,
    UploadCreateSerializer,
    UploadSerializer,
)
from api.exceptions import Conflict
from api.parsers import BoundedJSONParser
from cards.models import Card, Course, Note
from courses import services
from courses.models import Upload
from courses.overview import drill_rows
from teams.models import Membership


def _membership(request: Request, slug: str) -> Membership:
    """The requester's membership of the team; 404 for everyone else."""
    found = Membership.objects.select_related("team__course").filter(team__slug=slug, user_id=request.user.pk)
    membership = found.first()
    if membership is None:
        raise NotFound("No such team.")
    return membership


def _editor(request: Request, slug: str) -> Membership:
    membership = _membership(request, slug)
    if not membership.can_edit_course:
        raise PermissionDenied("Only the team's owners and editors can change its course.")
    return membership


def _course(membership: Membership) -> Course:
    if membership.team.course is None:
        raise NotFound("This team has no course yet: an owner or editor uploads its first notes.")
    return membership.team.course


def _kinds(course: Course) -> dict[int, dict[str, int]]:
    """Active cards by note and kind (one grouped query)."""
    rows = Card.objects.filter(note__course=course, active=True).values("note_id", "kind").annotate(n=Count("pk"))
    found: dict[int, dict[str, int]] = {}
    for row in rows.order_by():
        found.setdefault(row["note_id"], {})[row["kind"]] = row["n"]
    return found


def _note_body(course: Course, note: Note, kinds: dict[str, int]) -> dict[str, Any]:
    return {
        "slug": course.unqualified(note.slug),
        "deck": note.slug,
        "title": note.title,
        "path": note.path,
        "imported_at": note.imported_at,
        "cards": sum(kinds.values()),
        "kinds": kinds,
    }


class CourseDetail(APIView):
    """Your team's course: its notes, cards by kind and drills."""

    @extend_schema(responses=CourseSerializer)
    def get(self, request: Request, slug: str) -> Response:
        membership = _membership(request, slug)
        course = _course(membership)
        kinds = services.kinds_of(course)
        body = {
            "team": membership.team.slug,
            "slug": course.slug,
            "title": course.title,
            "notes": Note.objects.filter(course=course).count(),
            "cards": sum(kinds.values()),
            "kinds": kinds,
            "drills": kinds.get(Card.Kind.DRILL, 0),
            "can_edit": membership.can_edit_course,
        }
        return Response(CourseSerializer(body).data)


class CourseNoteList(APIView):
    """The course's notes, by title."""

    @extend_schema(responses=CourseNoteSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        course = _course(_membership(request, slug))
        kinds = _kinds(course)
        notes = Note.objects.filter(course=course).defer("content").order_by("title", "slug")
        return Response(
            CourseNoteSerializer([_note_body(course, n, kinds.get(n.pk, {})) for n in notes], many=True).data
        )


class CourseNoteDetail(APIView):
    """One note of the course, with its Markdown."""

    @extend_schema(responses=CourseNoteDetailSerializer)
    def get(self, request: Request, slug: str, note: str) -> Response:
        course = _course(_membership(request, slug))
        found = Note.objects.filter(course=course, slug=course.qualified(note)).first()
        if found is None:
            raise NotFound("No such note in this course.")
        body = {**_note_body(course, found, _kinds(course).get(found.pk, {})), "content": found.content}
        return Response(CourseNoteDetailSerializer(body).data)


class CourseDrillList(APIView):
    """The course's drills, with how many of the team's members tried and solved each."""

    @extend_schema(responses=CourseDrillSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        membership = _membership(request, slug)
        course = _course(membership)
        rows = [
            {
                "slug": row.name,
                "drill": row.drill.slug,
                "title": row.drill.title,
                "difficulty": row.drill.difficulty,
                "deck": row.drill.card.note.slug,
                "card": row.drill.card.uuid,
                "attempted": row.attempted,
                "solved": row.solved,
            }
            for row in drill_rows(membership.team, course)
        ]
        return Response(CourseDrillSerializer(rows, many=True).data)


def _upload_body(upload: Upload) -> dict[str, Any]:
    return UploadSerializer(upload).data


class CourseUploadCreate(APIView):
    """Check and plan notes for the course (nothing imported yet): the answer is the import report, kept until
    it expires; confirm it to import. Send JSON `files` ([{name, text}]) or multipart `files` parts."""

    parser_classes = [BoundedJSONParser, MultiPartParser]

    @extend_schema(request=UploadCreateSerializer, responses={201: UploadSerializer})
    def post(self, request: Request, slug: str) -> Response:
        membership = _editor(request, slug)
        caps = services.Caps.from_settings()
        sent = _sent_files(request, caps)
        try:
            incoming = services.gather(sent, caps)
            kept = services.preview(membership.team, request.user, incoming, caps)
        except services.CourseError as exc:
            raise ValidationError({"files": exc.problems}) from None
        return Response(_upload_body(kept), status=status.HTTP_201_CREATED)


def _sent_files(request: Request, caps: services.Caps) -> list[tuple[str, bytes]]:
    """The files of a JSON body or of multipart parts, held to the team's byte cap before they are read."""
    parts = request.FILES.getlist("files") if hasattr(request.FILES, "getlist") else []
    if parts:
        size = sum(part.size or 0 for part in parts)
        if size > caps.upload_bytes:
            raise ValidationError({"files": [f"The upload is {size} bytes, over the limit of {caps.upload_bytes}."]})
        return [(part.name or "note.md", part.read(caps.upload_bytes + 1)) for part in parts]
    serializer = UploadCreateSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    files = serializer.validated_data.get("files") or []
    if not files:
        raise ValidationError({"files": ["Send at least one note."]})
    return [(entry["name"], entry["text"].encode()) for entry in files]


class CourseUploadDetail(APIView):
    """An upload's import report: per note, the cards to create, change and retire, and a few of each kind."""

    @extend_schema(responses=UploadSerializer)
    def get(self, request: Request, slug: str, upload: str) -> Response:
        membership = _editor(request, slug)
        found = Upload.objects.filter(team=membership.team, uuid=upload).first()
        if found is None:
            raise NotFound("No such upload.")
        return Response(_upload_body(found))


class CourseUploadConfirm(APIView):
    """Import a previewed upload. 409 when the course changed since the preview (nothing imported; the
    upload now holds the new report); 400 when it was imported, discarded or expired already."""

    @extend_schema(request=None, responses=ConfirmedSerializer)
    def post(self, request: Request, slug: str, upload: str) -> Response:
        membership = _editor(request, slug)
        found = Upload.objects.filter(team=membership.team, uuid=upload).first()
        if found is None:
            raise NotFound("No such upload.")
        try:
            done = services.confirm(found, request.user)
        except services.CourseChanged as exc:
            raise Conflict(str(exc)) from None
        except services.CourseError as exc:
            raise ValidationError({"upload": exc.problems}) from None
        notes = [
            {
                "slug": done.course.unqualified(r.slug),
                "created": len(r.created),
                "changed": len({*r.updated, *r.moved, *r.reactivated}),
                "retired": len(r.retired),
            }
            for r in done.reports
        ]
        body = {"course": done.course.slug, "notes": notes, "verified": done.verified}
        return Response(ConfirmedSerializer(body).data)
