"""Forms for the review flow and the learner's settings. Validation lives here, not in views."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from cards.models import CardState, Profile, Scheduler
from cards.scheduling.sm2 import Rating


class RatingForm(forms.Form):
    """One press of Again / Hard / Good / Easy. Quality 0 and 2 have no button and are refused."""

    quality = forms.TypedChoiceField(choices=[(int(r), r.name.title()) for r in Rating], coerce=int)
    version = forms.IntegerField(min_value=0)  # the card state's version the learner saw
    duration_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False)

    def clean_duration_ms(self) -> int:
        return self.cleaned_data.get("duration_ms") or 0


class SwitchSchedulerForm(forms.Form):
    """The confirmed switch: which scheduler to move to (the preview page posts it)."""

    to = forms.ChoiceField(choices=Scheduler.choices)


class SettingsForm(forms.ModelForm):
    """The review settings, and the learner's email address (the daily digest's only way to reach them)."""

    email = forms.EmailField(
        required=False, label=_("Email (for the daily digest; never shown to anyone)"), max_length=254
    )

    class Meta:
        model = Profile
        fields = [
            "language",
            "time_zone",
            "day_start_hour",
            "new_cards_per_day",
            "reviews_per_day",
            "desired_retention",
            "fuzz",
        ]
        labels = {
            "language": _("Interface language"),
            "desired_retention": _("Desired retention under FSRS (0.70-0.99)"),
            "fuzz": _("Fuzz and balance due days"),
            "time_zone": _("Time zone (IANA name, e.g. Asia/Shanghai)"),
            "day_start_hour": _("A new day starts at (hour, 0-23)"),
            "new_cards_per_day": _("New cards per day"),
            "reviews_per_day": _("Reviews per day"),
        }
        help_texts = {
            "language": _("The header's switch changes it too; “As my browser asks” follows your browser's language."),
            "day_start_hour": _("Your day starts at this hour (local time), as Anki's next day does."),
            "fuzz": _(
                "Move each due day a little (to the least busy day nearby, away from related cards). "
                "Off, SM-2 is exactly SM-2."
            ),
            "desired_retention": _(
                "FSRS schedules each card for when recall is predicted to fall to this probability."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["day_start_hour"].widget.attrs.update(min=0, max=23)
        self.fields["new_cards_per_day"].widget.attrs.update(max=1000)
        self.fields["reviews_per_day"].widget.attrs.update(max=10000)
        self.fields["desired_retention"].widget.attrs.update(min="0.70", max="0.99", step="0.01")
        self.fields["desired_retention"].required = False  # left out: kept as it was
        self.fields["time_zone"].widget.attrs.update(list="time-zones", autocomplete="off")

    def save(self, commit: bool = True) -> Any:
        profile = super().save(commit=commit)
        if commit and "email" in self.changed_data:
            profile.user.email = self.cleaned_data["email"]
            profile.user.save(update_fields=["email"])
        return profile

    def clean_day_start_hour(self) -> int:
        value: int = self.cleaned_data["day_start_hour"]
        if not 0 <= value <= 23:
            raise forms.ValidationError(_("Pick an hour from 0 to 23."))
        return value

    def clean_new_cards_per_day(self) -> int:
        return self._at_most("new_cards_per_day", 1000)

    def clean_reviews_per_day(self) -> int:
        return self._at_most("reviews_per_day", 10000)

    def clean_desired_retention(self) -> Decimal:
        value: Decimal | None = self.cleaned_data["desired_retention"]
        if value is None:
            return self.instance.desired_retention
        if not Decimal("0.70") <= value <= Decimal("0.99"):
            raise forms.ValidationError(_("Pick a retention from 0.70 to 0.99 (0.90 is the usual choice)."))
        return value

    def _at_most(self, name: str, limit: int) -> int:
        value: int = self.cleaned_data[name]
        if value > limit:
            raise forms.ValidationError(_("At most %(limit)d.") % {"limit": limit})
        return value


class CardNoteForm(forms.ModelForm):
    """Anki's "edit" for a shared, imported card: the learner's own note and the suspend switch."""

    class Meta:
        model = CardState
        fields = ["user_note", "suspended"]
        labels = {"user_note": _("My note on this card"), "suspended": _("Suspended (never shown in reviews)")}
        widgets = {"user_note": forms.Textarea(attrs={"rows": 6})}


class CardTextForm(forms.Form):
    """A learner's own private card (an Anki import): its front and back, Markdown, corrected in place."""

    front = forms.CharField(label=_("Front"), max_length=20_000, widget=forms.Textarea(attrs={"rows": 4}))
    back = forms.CharField(label=_("Back"), max_length=20_000, required=False, widget=forms.Textarea(attrs={"rows": 6}))


class SignupForm(UserCreationForm):
    """A new learner with their review settings row, so no later page has to create it on a GET."""

    email = forms.EmailField(required=False, label=_("Email (optional: for the daily digest)"), max_length=254)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def save(self, commit: bool = True) -> Any:
        with transaction.atomic():
            user = super().save(commit=commit)
            if commit:
                Profile.objects.create(user=user)
        return user
