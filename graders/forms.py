"""The drill page's form: the learner's code and which button sent it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from graders.models import Submission


class SubmissionForm(forms.Form):
    """Refuses code over the size cap before anything is stored or queued.

    The cap is the smaller of the site's ``GRADER_MAX_CODE_BYTES`` and the drill's own
    ``max_source_bytes`` constraint, measured in UTF-8 bytes (what the sandbox measures).
    """

    code = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}))
    kind = forms.ChoiceField(choices=Submission.Kind.choices, initial=Submission.Kind.SUBMIT)

    def __init__(self, *args: Any, max_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_bytes = min(max_bytes or settings.GRADER_MAX_CODE_BYTES, settings.GRADER_MAX_CODE_BYTES)

    def clean_code(self) -> str:
        code: str = self.cleaned_data["code"]
        size = len(code.encode("utf-8"))
        if size > self.max_bytes:
            raise forms.ValidationError(
                f"Your code is {size:,} bytes; the limit for this drill is {self.max_bytes:,} bytes.", code="too_big"
            )
        if not code.strip():
            raise forms.ValidationError("Write some code first.", code="empty")
        return code
