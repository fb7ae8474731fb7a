"""Digest addresses and what a digest mail may say (issue 36: digests went to any address a learner typed, with
a free-text team name in them: a phishing channel).

1. A digest goes only to an address its owner confirmed: the learner asks (turning the digest on does), a mail
   with a signed link (``django.core.signing``, ``DIGEST_CONFIRM_MAX_AGE``) goes to the address, and opening it
   and pressing Confirm records the address. Changing the account's address needs a new confirmation.
2. Asking is counted (``quizsite.throttle``): per learner and per address, so nobody can make the site mail a
   stranger's inbox over and over. The confirmation mail carries nothing a user wrote, not even a username.
3. Text a user wrote (a team's name, a username) reaches a digest only through ``mail_text``: one line, no
   control or direction characters, and every character a mail client would build a link from bracketed.

Runs in the web process (asking, confirming, the preferences page) and in beat's digest job (who is mailed).
"""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _

from quizsite.throttle import Counter

from .models import BoardPreference

CONFIRM_SALT = "teams.digest.confirm"
# Confirmation mails: per learner an hour, per address a day.
ASKS_PER_LEARNER, ASK_WINDOW_LEARNER = 3, 3600
ASKS_PER_ADDRESS, ASK_WINDOW_ADDRESS = 5, 86400
# Characters a mail client turns into (part of) a link: the dot of a domain, the @ of an address, a
# scheme's colon, a path's slashes. Bracketed ("evil[.]com"), as security advisories defang addresses.
_LINKABLE = re.compile(r"([.@:/\\])")
_SPACES = re.compile(r"\s+")


class DigestError(Exception):
    """A confirmation that cannot be made; the message is shown to whoever opened the link."""


class State(enum.StrEnum):
    NO_ADDRESS = "no_address"
    UNCONFIRMED = "unconfirmed"
    CONFIRMED = "confirmed"


def state(user: AbstractBaseUser, pref: BoardPreference | None) -> State:
    """Where the learner's digest address stands (the preferences page shows it)."""
    email = getattr(user, "email", "")
    if not email:
        return State.NO_ADDRESS
    if pref is not None and pref.confirmed_email == email:
        return State.CONFIRMED
    return State.UNCONFIRMED


def mailable(pref: BoardPreference) -> bool:
    """Step 1: the account's address, confirmed through its link."""
    return state(pref.user, pref) is State.CONFIRMED


def mail_text(text: str) -> str:
    """Step 3: user-written text as a mail may carry it: one line, printable, nothing a client links."""
    spaced = "".join(" " if ch.isspace() else ch for ch in text)
    kept = "".join(ch for ch in spaced if unicodedata.category(ch) not in ("Cc", "Cf"))
    return _LINKABLE.sub(r"[\1]", _SPACES.sub(" ", kept).strip())


def confirm_token(user_id: int, email: str) -> str:
    return signing.dumps({"u": user_id, "e": email}, salt=CONFIRM_SALT, compress=True)


def confirm_url(user_id: int, email: str) -> str:
    return settings.SITE_URL + reverse("teams:confirm_digest", args=[confirm_token(user_id, email)])


def _counters(user: AbstractBaseUser, email: str) -> tuple[Counter, Counter]:
    return (
        Counter("digest-confirm-learner", str(user.pk), ASKS_PER_LEARNER, ASK_WINDOW_LEARNER),
        Counter("digest-confirm-address", email.casefold(), ASKS_PER_ADDRESS, ASK_WINDOW_ADDRESS),
    )


@dataclass(frozen=True)
class Asked:
    """What asking for a confirmation did: the link was mailed to ``email``, or not before ``wait`` seconds."""

    email: str
    wait: int

    def message(self) -> str:
        if self.wait:
            minutes = max(1, -(-self.wait // 60))
            return _(
                "A confirmation link was mailed to %(email)s a short while ago; open it to start the digest. "
                "Another can be sent in %(minutes)d minutes."
            ) % {"email": self.email, "minutes": minutes}
        return _(
            "We mailed a confirmation link to %(email)s. The digest starts once you open it and confirm; "
            "until then nothing else is sent there."
        ) % {"email": self.email}


def ask_to_confirm(user: AbstractBaseUser) -> Asked:
    """Step 2: mail the learner's current address its confirmation link, unless asked too often."""
    email = str(getattr(user, "email", ""))
    if not email:
        raise DigestError(_("Add an email address on your settings page first: the digest needs somewhere to go."))
    counters = _counters(user, email)
    wait = max(counter.wait() for counter in counters)
    if wait:
        return Asked(email, wait)
    for counter in counters:
        counter.hit()
    context = {"confirm_url": confirm_url(user.pk, email), "site_url": settings.SITE_URL}
    body = render_to_string("teams/digest_confirm_email.txt", context)
    EmailMessage(_("Confirm this address for quizsite's daily digest"), body, None, [email]).send()
    return Asked(email, 0)


def address_of(token: str) -> tuple[AbstractBaseUser, str]:
    """The account and address a confirmation link names, if it is still valid and still the account's."""
    try:
        data = signing.loads(token, salt=CONFIRM_SALT, max_age=settings.DIGEST_CONFIRM_MAX_AGE)
    except signing.BadSignature:
        raise DigestError(_("This confirmation link is invalid or has expired.")) from None
    user = get_user_model().objects.filter(pk=data.get("u")).first()
    if user is None or not data.get("e") or getattr(user, "email", "") != data["e"]:
        raise DigestError(_("This confirmation link is for an address the account no longer uses."))
    return user, str(data["e"])


def confirm(token: str) -> BoardPreference:
    """Step 1's last step: record the address the link names as the learner's confirmed digest address."""
    user, email = address_of(token)
    pref, _created = BoardPreference.objects.get_or_create(user=user)
    pref.confirmed_email = email
    pref.save(update_fields=["confirmed_email"])
    return pref
