"""Anki export and import pages.

Export is for every learner: any deck they can see (or all of them) as an ``.apkg``, optionally with
the learner's own intervals and due days (their scheduler's, SM-2's or FSRS's, and the form says which).
Import is for every learner too, and private: the deck is theirs alone (``Note.owner``), never in another
learner's queue, deck list or API. Staff (``cards.add_card``) may instead share an imported deck with everyone.
"""

from __future__ import annotations

import io
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods

from cards import anki
from cards import review as reviewing
from cards.models import Note, Scheduler

ALL_DECKS = "all"


class ExportForm(forms.Form):
    deck = forms.ChoiceField(label=gettext_lazy("Deck"))
    schedule = forms.BooleanField(
        required=False,
        label=gettext_lazy("Include my intervals and due dates"),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(ALL_DECKS, _("All decks"))]
        notes = Note.objects.visible_to(user).filter(cards__active=True).distinct()
        choices += list(notes.values_list("slug", "title"))
        self.fields["deck"].choices = choices
        if reviewing.get_profile(user).scheduler == Scheduler.FSRS:
            self.fields["schedule"].help_text = _(
                "Cards you have reviewed arrive in Anki as review cards with your FSRS interval (the days from "
                "your last review to the due day FSRS set), that due day, and your ease."
            )
        else:
            self.fields["schedule"].help_text = _(
                "Cards you have reviewed arrive in Anki as review cards with your SM-2 interval, due day and ease."
            )


class ImportForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("Anki package (.apkg) or CSV file"),
        help_text=gettext_lazy("A CSV file holds one card per row: front, back and optionally space-separated tags."),
    )
    title = forms.CharField(max_length=300, required=False, label=gettext_lazy("Deck title (optional)"))
    shared = forms.BooleanField(
        required=False,
        label=gettext_lazy("Share with every learner"),
        help_text=gettext_lazy("Staff only. Unticked, the deck is yours alone, as every learner's import is."),
    )

    def __init__(self, *args: Any, can_share: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not can_share:
            del self.fields["shared"]

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > settings.ANKI_IMPORT_MAX_BYTES:
            raise forms.ValidationError(
                _("The file is %(size)d bytes, over the %(limit)d byte limit.")
                % {"size": upload.size, "limit": settings.ANKI_IMPORT_MAX_BYTES}
            )
        return upload


@login_required
@require_GET
def anki_export(request: HttpRequest) -> HttpResponse:
    form = ExportForm(request.GET if "deck" in request.GET else None, user=request.user)
    if not form.is_valid():
        return render(request, "cards/anki_export.html", {"form": form})
    slug = form.cleaned_data["deck"]
    visible = Note.objects.visible_to(request.user)
    notes = list(visible if slug == ALL_DECKS else visible.filter(slug=slug))
    schedule_for = request.user if form.cleaned_data["schedule"] else None
    package, _skipped = anki.build_package(notes, schedule_for=schedule_for, learner=request.user)
    buffer = io.BytesIO()
    anki.write_apkg(package, buffer)
    name = f"quizsite-{slug}-{timezone.now():%Y%m%d}.apkg"
    response = HttpResponse(buffer.getvalue(), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def anki_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None, can_share=request.user.has_perm("cards.add_card"))
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        owner = None if form.cleaned_data.get("shared") else request.user
        try:
            note, parsed = anki.import_file(
                upload.name, upload.read(), title=form.cleaned_data["title"], owner=owner, reviewer=request.user
            )
        except anki.AnkiImportError as exc:
            form.add_error("file", str(exc))
        else:
            left_out = f" ({parsed.summary()})" if parsed.summary() else ""
            whose = _("shared with every learner") if owner is None else _("private to you")
            imported = ngettext(
                "Imported %(n)d card into “%(title)s”, %(whose)s%(left_out)s.",
                "Imported %(n)d cards into “%(title)s”, %(whose)s%(left_out)s.",
                len(parsed.cards),
            )
            said = imported % {"n": len(parsed.cards), "title": note.title, "whose": whose, "left_out": left_out}
            if parsed.history is not None and parsed.history.imported:
                said += " " + ngettext(
                    "Its review log added %(n)d past review to your history.",
                    "Its review log added %(n)d past reviews to your history.",
                    parsed.history.imported,
                ) % {"n": parsed.history.imported}
            messages.success(request, said)
            return redirect("cards:deck", slug=note.slug)
    return render(request, "cards/anki_import.html", {"form": form}, status=400 if form.errors else 200)
