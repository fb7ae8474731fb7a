"""Digest addresses (teams.digests): no digest without an address, none to an address its owner did not confirm
through the signed link mailed to it, and asking for that link is counted."""

from __future__ import annotations

import re

from django.core import mail
from django.core.cache import cache
from django.test import Client, override_settings
from django.urls import reverse

from cards.models import Profile
from teams import digests
from teams.models import BoardPreference

from .base import TeamTestCase


@override_settings(SITE_URL="https://quiz.example.com")
class DigestAddressTests(TeamTestCase):
    def setUp(self) -> None:
        cache.clear()
        self.client.force_login(self.member)

    def set_email(self, email: str) -> None:
        self.member.email = email
        self.member.save(update_fields=["email"])

    def opt_in(self) -> object:
        return self.client.post(reverse("teams:preferences"), {"daily_digest": "on"}, follow=True)

    def link(self) -> str:
        found = re.search(r"https://quiz\.example\.com(/teams/digest/confirm/\S+/)", mail.outbox[-1].body)
        assert found, mail.outbox[-1].body
        return found.group(1)

    def test_it_refuses_a_digest_without_an_address_and_says_why(self) -> None:
        response = self.opt_in()
        self.assertContains(response, "Add an email address on your settings page first")
        assert not BoardPreference.objects.filter(user=self.member, daily_digest=True).exists()
        self.assertContains(self.client.get(reverse("teams:preferences")), 'data-digest-state="no_address"')
        assert mail.outbox == []

    def test_it_mails_a_confirmation_link_and_nothing_else_until_it_is_confirmed(self) -> None:
        self.set_email("max@example.com")
        response = self.opt_in()
        self.assertContains(response, "We mailed a confirmation link to max@example.com")
        self.assertContains(response, 'data-digest-state="unconfirmed"')
        [message] = mail.outbox
        assert message.to == ["max@example.com"]
        assert "max" not in message.body.replace("max@", "")  # no username, no team name: nothing a user wrote
        assert BoardPreference.objects.get(user=self.member).confirmed_email == ""

    def test_the_preferences_page_shows_the_address_and_the_send_time(self) -> None:
        self.set_email("max@example.com")
        Profile.objects.update_or_create(user=self.member, defaults={"time_zone": "Asia/Shanghai"})
        page = self.client.get(reverse("teams:preferences"))
        self.assertContains(page, "<strong>max@example.com</strong>")
        self.assertContains(page, "in the hour after 08:00 in your time zone (Asia/Shanghai)")

    def test_it_confirms_on_post_only_so_a_link_scanner_confirms_nothing(self) -> None:
        self.set_email("max@example.com")
        self.opt_in()
        stranger = Client()  # the mailbox's owner need not be logged in: the link is the proof
        page = stranger.get(self.link())
        self.assertContains(page, "max@example.com")
        assert BoardPreference.objects.get(user=self.member).confirmed_email == ""
        self.assertContains(stranger.post(self.link()), "data-confirmed")
        assert BoardPreference.objects.get(user=self.member).confirmed_email == "max@example.com"
        page = self.client.get(reverse("teams:preferences"))
        self.assertContains(page, 'data-digest-state="confirmed"')
        self.assertContains(page, "max@example.com")

    def test_it_refuses_a_link_for_an_address_the_account_left(self) -> None:
        self.set_email("max@example.com")
        self.opt_in()
        link = self.link()
        self.set_email("max@elsewhere.example")
        assert Client().post(link).status_code == 404
        assert BoardPreference.objects.get(user=self.member).confirmed_email == ""

    def test_it_refuses_forged_and_expired_links(self) -> None:
        self.set_email("max@example.com")
        forged = reverse("teams:confirm_digest", args=[digests.confirm_token(self.member.pk, "max@example.com")[:-2]])
        assert Client().post(forged).status_code == 404
        with override_settings(DIGEST_CONFIRM_MAX_AGE=-1):
            expired = reverse("teams:confirm_digest", args=[digests.confirm_token(self.member.pk, "max@example.com")])
            assert Client().post(expired).status_code == 404
        assert BoardPreference.objects.get_or_create(user=self.member)[0].confirmed_email == ""

    def test_it_mails_an_address_three_times_an_hour_at_most(self) -> None:
        self.set_email("victim@example.com")
        self.opt_in()
        for _ in range(5):
            response = self.client.post(reverse("teams:resend_digest_confirmation"), follow=True)
        assert len(mail.outbox) == 3
        self.assertContains(response, "Another can be sent in")

    def test_it_needs_a_new_confirmation_when_the_address_changes(self) -> None:
        self.set_email("max@example.com")
        self.opt_in()
        Client().post(self.link())
        self.set_email("max@elsewhere.example")
        page = self.client.get(reverse("teams:preferences"))
        self.assertContains(page, 'data-digest-state="unconfirmed"')
        self.client.post(reverse("teams:resend_digest_confirmation"))
        assert mail.outbox[-1].to == ["max@elsewhere.example"]


def test_it_keeps_user_text_to_one_line_with_nothing_a_mail_client_links() -> None:
    assert digests.mail_text("Tensor Tamers") == "Tensor Tamers"
    assert digests.mail_text("张量 小组") == "张量 小组"
    assert digests.mail_text("see www.evil.example") == "see www[.]evil[.]example"
    assert digests.mail_text("a\r\n\tb") == "a b"
    assert digests.mail_text("mail me: x@evil.example") == "mail me[:] x[@]evil[.]example"
    assert digests.mail_text("\u202egnp.exe \u200b") == "gnp[.]exe"
