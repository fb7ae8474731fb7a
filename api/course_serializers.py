"""What the course endpoints read and write (``api.course_views``): a team's course, its notes and drills, and
an upload's import report. Public ids only (slugs, UUIDs); never a drill's reference or hidden cases."""

from __future__ import annotations

from rest_framework import serializers

from api.serializers import NO_NUL

KIND_COUNTS = serializers.DictField(child=serializers.IntegerField(), help_text="Active cards by kind.")


class CourseSerializer(serializers.Serializer):
    team = serializers.SlugField()
    slug = serializers.SlugField(help_text="The course's slug (its notes' decks are `<course>--<note>`).")
    title = serializers.CharField()
    notes = serializers.IntegerField()
    cards = serializers.IntegerField(help_text="Active cards of every kind, drills included.")
    kinds = serializers.DictField(child=serializers.IntegerField(), help_text="Active cards by kind.")
    drills = serializers.IntegerField()
    can_edit = serializers.BooleanField(help_text="You may upload notes (an owner or an editor).")


class CourseNoteSerializer(serializers.Serializer):
    slug = serializers.CharField(help_text="The note's name in the course (its file name less .md).")
    deck = serializers.CharField(help_text="The deck slug: /api/v1/decks/<deck>/cards/ lists its cards.")
    title = serializers.CharField()
    path = serializers.CharField(help_text="The file it was uploaded as.")
    imported_at = serializers.DateTimeField()
    cards = serializers.IntegerField(help_text="Active cards.")
    kinds = serializers.DictField(child=serializers.IntegerField(), help_text="Active cards by kind.")


class CourseNoteDetailSerializer(CourseNoteSerializer):
    content = serializers.CharField(help_text="The note's Markdown, as uploaded.")


class CourseDrillSerializer(serializers.Serializer):
    slug = serializers.CharField(help_text="The drill's slug in the course (as its file names it).")
    drill = serializers.CharField(help_text="The drill's site-wide slug: /api/v1/drills/<drill>/.")
    title = serializers.CharField()
    difficulty = serializers.CharField()
    deck = serializers.CharField(help_text="The deck slug of the note it belongs to.")
    card = serializers.UUIDField()
    attempted = serializers.IntegerField(help_text="Members of the team with a graded submission.")
    solved = serializers.IntegerField(help_text="Members of the team with an accepted submission.")


class UploadFileSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=300, validators=[NO_NUL], help_text="e.g. autograd.md, cards/autograd.toml")
    text = serializers.CharField(trim_whitespace=False, validators=[NO_NUL], allow_blank=True)


class UploadCreateSerializer(serializers.Serializer):
    """Notes as JSON (`files`); multipart `files` parts (Markdown, cards files or zips) are read too."""

    files = UploadFileSerializer(many=True, required=False, help_text="The notes and their cards files, as text.")


class CardPreviewSerializer(serializers.Serializer):
    kind = serializers.CharField()
    front = serializers.CharField(help_text="Markdown.")
    back = serializers.CharField(help_text="Markdown.")


class NoteEntrySerializer(serializers.Serializer):
    slug = serializers.CharField()
    path = serializers.CharField()
    title = serializers.CharField()
    cards = serializers.IntegerField(help_text="Cards the note gives.")
    kinds = KIND_COUNTS
    note_created = serializers.BooleanField()
    note_changed = serializers.BooleanField()
    created = serializers.ListField(child=serializers.CharField(), help_text="Fronts of the cards to create.")
    updated = serializers.ListField(child=serializers.CharField())
    moved = serializers.ListField(child=serializers.CharField())
    reactivated = serializers.ListField(child=serializers.CharField())
    retired = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.IntegerField()
    text_edits = serializers.ListField(child=serializers.CharField())
    warnings = serializers.ListField(child=serializers.CharField())
    previews = CardPreviewSerializer(many=True)


class UploadSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    state = serializers.ChoiceField(choices=["preview", "confirmed", "discarded"])
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(help_text="Confirm before then.")
    notes = NoteEntrySerializer(many=True, source="report.notes")
    skipped = serializers.ListField(child=serializers.CharField(), source="report.skipped")


class ConfirmedNoteSerializer(serializers.Serializer):
    slug = serializers.CharField()
    created = serializers.IntegerField()
    changed = serializers.IntegerField()
    retired = serializers.IntegerField()


class ConfirmedSerializer(serializers.Serializer):
    course = serializers.SlugField()
    notes = ConfirmedNoteSerializer(many=True)
    verified = serializers.ListField(child=serializers.CharField(), help_text="The sandbox check of output cards.")
