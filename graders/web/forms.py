"""The drill page's forms: the learner's code and which button sent it; "Run" on the learner's own arguments."""

from __future__ import annotations

from typing import Any

from django import forms

from graders.attempts.runs import check_arguments
from graders.attempts.submissions import code_problem
from graders.models import Submission


class SubmissionForm(forms.Form):
    """Refuses code the submit use case would refuse (``graders.attempts.submissions.code_problem``), with the form."""

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


class RunForm(SubmissionForm):
    """The code and the arguments of a "Run", as the learner would write ``f(<arguments>)``: refused here when
    outside the case language (``graders.attempts.runs.check_arguments``), before anything is stored."""

    kind = None  # type: ignore[assignment]  # "Run" is its own button, with its own URL
    arguments = forms.CharField(strip=False, required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_arguments(self) -> str:
        text: str = self.cleaned_data["arguments"]
        problem = check_arguments(text).problem
        if problem is not None:
            raise forms.ValidationError(problem, code="invalid")
        return text
