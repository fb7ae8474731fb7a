"""Forms for the team pages; every field validated here, never in the view."""

from __future__ import annotations

from django import forms

from cards.models import Scheduler, validate_time_zone


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)
    time_zone = forms.CharField(
        max_length=64,
        validators=[validate_time_zone],
        help_text="Weekly seasons start on Monday at 04:00 in this time zone (e.g. Asia/Shanghai).",
    )


class DefaultSchedulerForm(forms.Form):
    scheduler = forms.ChoiceField(
        choices=Scheduler.choices,
        label="Default scheduler",
        help_text="For members who never chose one themselves; they can still switch on their settings page.",
    )


class RenameForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)


class PreferenceForm(forms.Form):
    global_board = forms.BooleanField(required=False, label="Show me on the global leaderboard")
    daily_digest = forms.BooleanField(required=False, label="Email me a daily digest")


class PeriodForm(forms.Form):
    """The board's ``?period=`` query: this week's season or all time."""

    period = forms.ChoiceField(choices=[("week", "This week"), ("all", "All time")], required=False)

    def period_or_default(self) -> str:
        if self.is_valid() and self.cleaned_data["period"]:
            return str(self.cleaned_data["period"])
        return "week"
