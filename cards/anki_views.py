"""Anki export and import pages.

Export is for every learner: any deck (or all of them) as an ``.apkg``, optionally with the
learner's own SM-2 intervals and due days. Import is for staff only (``cards.add_card``), because
cards are shared: an imported deck enters every learner's new-card queue.
"""

from __future__ import annotations

import io
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from cards import anki
from cards.models import Note

ALL_DECKS = "all"


class ExportForm(forms.Form):
    deck = forms.ChoiceField(label="Deck")
    schedule = forms.BooleanField(
        required=False,
        label="Include my intervals and due dates",
        help_text="Cards you have reviewed arrive in Anki as review cards with your SM-2 interval, due day and ease.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(ALL_DECKS, "All decks")]
        choices += list(Note.objects.filter(cards__active=True).distinct().values_list("slug", "title"))
        self.fields["deck"].choices = choices


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Anki package (.apkg) or CSV file",
        help_text="A CSV file holds one card per row: front, back and optionally space-separated tags.",
    )
    title = forms.CharField(max_length=300, required=False, label="Deck title (optional)")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > anki.MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is over the {anki.MAX_UPLOAD_BYTES // (1024 * 1024)} MiB limit.")
        return upload


@login_required
@require_GET
def anki_export(request: HttpRequest) -> HttpResponse:
    form = ExportForm(request.GET if "deck" in request.GET else None)
    if not form.is_valid():
        return render(request, "cards/anki_export.html", {"form": form})
    slug = form.cleaned_data["deck"]
    notes = list(Note.objects.all() if slug == ALL_DECKS else Note.objects.filter(slug=slug))
    package, _ = anki.build_package(notes, schedule_for=request.user if form.cleaned_data["schedule"] else None)
    buffer = io.BytesIO()
    anki.write_apkg(package, buffer)
    name = f"quizsite-{slug}-{timezone.now():%Y%m%d}.apkg"
    response = HttpResponse(buffer.getvalue(), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@permission_required("cards.add_card", raise_exception=True)
@require_http_methods(["GET", "POST"])
def anki_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            note, parsed = anki.import_file(upload.name, upload.read(), title=form.cleaned_data["title"])
        except anki.AnkiImportError as exc:
            form.add_error("file", str(exc))
        else:
            skipped = f" ({parsed.skipped} without a front skipped)" if parsed.skipped else ""
            messages.success(request, f"Imported {len(parsed.cards)} cards into “{note.title}”{skipped}.")
            return redirect("cards:deck", slug=note.slug)
    return render(request, "cards/anki_import.html", {"form": form}, status=400 if form.errors else 200)
