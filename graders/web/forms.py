"""The drill page's form: the learner's code and which button sent it."""

from __future__ import annotations

from typing import Any

from django import forms

from graders.models import Submission
from graders.web.submissions import code_problem


class SubmissionForm(forms.Form):
    """Refuses code the submit use case would refuse (``graders.web.submissions.code_problem``), with the form."""

    code = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}))
    kind = forms.ChoiceField(choices=Submission.Kind.choices, initial=Submission.Kind.SUBMIT)

    def __init__(self, *args: Any, max_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_bytes = max_bytes

    def clean_code(self) -> str:
        code: str = self.cleaned_data["code"]
        problem = code_problem(code, self.max_bytes)
        if problem is not None:
            raise forms.ValidationError(problem, code="invalid")
        return code
