"""Forms for the team pages; every field validated here, never in the view."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from cards.models import LearningStage, Scheduler, validate_stage_order, validate_time_zone
from graders.drills.solution_key import KEY_LENGTH

from .learning_orders import moved
from .models import COMMENT_MAX_CHARS


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True, label=_("Name"))
    time_zone = forms.CharField(
        max_length=64,
        validators=[validate_time_zone],
        label=_("Time zone"),
        help_text=_("Weekly seasons start on Monday at 04:00 in this time zone (e.g. Asia/Shanghai)."),
    )


class DefaultSchedulerForm(forms.Form):
    scheduler = forms.ChoiceField(
        choices=Scheduler.choices,
        label=_("Default scheduler"),
        help_text=_("For members who never chose one themselves; they can still switch on their settings page."),
    )


class RenameForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True, label=_("Name"))


class PreferenceForm(forms.Form):
    """The board and digest opt-ins. The digest needs an address: turning it on without one is refused here,
    and with one it is mailed a confirmation link first (``teams.digests``)."""

    global_board = forms.BooleanField(required=False, label=_("Show me on the global leaderboard"))
    daily_digest = forms.BooleanField(
        required=False,
        label=_("Email me a daily digest"),
        help_text=_("Sent only to an address you confirmed through the link we mail to it."),
    )

    def __init__(self, *args: Any, user: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_daily_digest(self) -> bool:
        wanted = bool(self.cleaned_data.get("daily_digest"))
        if wanted and not getattr(self.user, "email", ""):
            raise ValidationError(
                _("Add an email address on your settings page first: the digest needs somewhere to go."),
                code="no_address",
            )
        return wanted


class PeriodForm(forms.Form):
    """The board's ``?period=`` query: this week's season or all time."""

    period = forms.ChoiceField(choices=[("week", _("This week")), ("all", _("All time"))], required=False)

    def period_or_default(self) -> str:
        if self.is_valid() and self.cleaned_data["period"]:
            return str(self.cleaned_data["period"])
        return "week"


class LearningOrderForm(forms.Form):
    """The team page's learning-order form: every stage in the shown order (``stage``, repeated), and the
    button pressed: ``move`` ("<slug>:up" or "<slug>:down") or ``reset`` (back to the default order).
    ``cleaned_data["order"]`` is the order to save."""

    stage = forms.MultipleChoiceField(required=False, error_messages={"invalid_choice": _("No such stage: %(value)s.")})
    move = forms.RegexField(
        regex=r"^[-\w]+:(up|down)$", required=False, error_messages={"invalid": _("A stage moves up or down.")}
    )
    reset = forms.BooleanField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["stage"].choices = [(slug, slug) for slug in LearningStage.objects.values_list("slug", flat=True)]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        if data.get("reset"):
            data["order"] = []
            return data
        order = list(data.get("stage") or [])
        if not order:
            raise ValidationError(_("The form sent no stages: reload the team page and try again."))
        validate_stage_order(order)
        if data.get("move"):
            slug, direction = data["move"].split(":")
            if slug not in order:
                raise ValidationError(_("No such stage in this order: %(slug)s.") % {"slug": slug})
            order = moved(order, slug, direction)
        data["order"] = order
        return data

    def error_text(self) -> str:
        return " ".join(str(message) for messages in self.errors.values() for message in messages)


class RoleForm(forms.Form):
    """An owner's choice for a member: editor of the team's course, or member."""

    role = forms.ChoiceField(
        choices=[("editor", _("Editor")), ("member", _("Member"))],
        error_messages={"invalid_choice": _("A member can be made an editor or a member.")},
    )


class SolutionCommentEditForm(forms.Form):
    """The new text of a teacher's own comment."""

    text = forms.CharField(label=_("Comment"), max_length=COMMENT_MAX_CHARS, widget=forms.Textarea(attrs={"rows": 3}))


class SolutionCommentForm(forms.Form):
    """A teacher's comment on one group of a drill's solutions, for one of the teams they teach."""

    key = forms.CharField(max_length=KEY_LENGTH, widget=forms.HiddenInput)
    team = forms.SlugField(max_length=80)
    text = forms.CharField(label=_("Comment"), max_length=COMMENT_MAX_CHARS, widget=forms.Textarea(attrs={"rows": 3}))
