"""The course page's upload form: Markdown files, zips of them, or a note pasted with its file name."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext_lazy as _

PASTE_NAME_HELP = _("The note's file name, e.g. autograd.md: it names the note (Latin letters, digits, '-').")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files from one ``<input type=file multiple>``: a list, empty when none was picked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".md,.markdown,.toml,.zip"}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data if item]
        return [single(data, initial)] if data else []


class UploadForm(forms.Form):
    files = MultipleFileField(
        required=False,
        label=_("Notes"),
        help_text=_(
            "Markdown notes (.md), each with its cards file (cards/<note>.toml or <note>.toml) if it has one, "
            "or a zip of a course folder."
        ),
    )
    paste_name = forms.CharField(
        required=False, max_length=120, label=_("Or paste a note: file name"), help_text=PASTE_NAME_HELP
    )
    paste_text = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8}), label=_("Note text (Markdown)")
    )

    def __init__(self, *args: Any, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_bytes = max_bytes

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        files, name, text = (
            data.get("files") or [],
            (data.get("paste_name") or "").strip(),
            data.get("paste_text") or "",
        )
        if text.strip() and not name:
            self.add_error("paste_name", _("Name the pasted note (e.g. autograd.md)."))
        if name and not text.strip():
            self.add_error("paste_text", _("Paste the note's text, or leave its name empty."))
        if not files and not text.strip() and not self.errors:
            raise forms.ValidationError(_("Pick notes to upload, or paste one."))
        size = sum(f.size or 0 for f in files) + len(text.encode())
        if size > self.max_bytes:
            raise forms.ValidationError(
                _("The upload is %(size)d bytes, over this site's limit of %(cap)d bytes an upload.")
                % {"size": size, "cap": self.max_bytes}
            )
        if name and "." not in name.rsplit("/", 1)[-1]:
            data["paste_name"] = f"{name}.md"
        return data

    def uploads(self) -> list[tuple[str, bytes]]:
        """Every file sent as (name, bytes), the pasted note last; each read no further than the cap."""
        sent = [(f.name or "note.md", f.read(self.max_bytes + 1)) for f in self.cleaned_data["files"]]
        name, text = self.cleaned_data.get("paste_name") or "", self.cleaned_data.get("paste_text") or ""
        if text.strip():
            sent.append((name, text.encode()))
        return sent
