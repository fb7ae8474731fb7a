"""Team jobs, all periodic (celery beat, see CELERY_BEAT_SCHEDULE): the touched days' refresh every second,
seasons, digests and the nightly rebuild.

Thin tasks over plain functions. The plain functions take ``now`` so tests call them directly.
Each is idempotent and the beat runs the clock-dependent ones hourly, so every team and learner
is served at their own local time whatever the server's time zone.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import ngettext, pgettext

from cards import calibrating, review
from cards import tasks as card_tasks
from cards.models import Profile, ReviewLog

from . import activity, boards, digests, services
from .models import BoardPreference, Membership, SeasonResult, Team

logger = logging.getLogger(__name__)

PODIUM = 3
UNSUBSCRIBE_SALT = "teams.digest.unsubscribe"
DIGEST_HOUR = 8  # local time: the digest goes out in the learner's morning, once per learner day


def record_season(team: Team, season: date, now: datetime) -> int:
    """Keep the podium of the team's season that opened on Monday ``season``. Returns rows written."""
    if SeasonResult.objects.filter(team=team, season=season).exists():
        return 0
    joined = dict(team.memberships.values_list("user_id", "joined_at"))
    rows = boards.compute_rows(list(joined), season, now)
    ranked = boards.rank(rows.values(), {u: j.timestamp() for u, j in joined.items()}, {}, None)
    winners = [e for e in ranked if e.row.xp > 0][:PODIUM]
    try:
        with transaction.atomic():
            SeasonResult.objects.bulk_create(
                SeasonResult(
                    team=team, season=season, rank=e.rank, user_id=e.row.user_id, xp=e.row.xp, score=e.row.score
                )
                for e in winners
            )
    except IntegrityError:
        return 0  # a concurrent run recorded this season first
    return len(winners)


def rollover_seasons(now: datetime | None = None) -> int:
    """For every team, keep the winners of the season that finished last (Monday 04:00 team time)."""
    now = now or timezone.now()
    return sum(
        record_season(team, boards.team_season(team, now) - timedelta(days=7), now) for team in Team.objects.all()
    )


def _ordinal(n: int) -> str:
    """ "1st", "2nd", ... in English; each its own message, so a language without suffixes ("第 1 名") fits."""
    if 10 <= n % 100 <= 20:
        return pgettext("ordinal", "%(n)dth") % {"n": n}
    forms = {1: pgettext("ordinal", "%(n)dst"), 2: pgettext("ordinal", "%(n)dnd"), 3: pgettext("ordinal", "%(n)drd")}
    return forms.get(n % 10, pgettext("ordinal", "%(n)dth")) % {"n": n}


def _due_today(user: AbstractBaseUser, today: date) -> int:
    """What the learner's review page will say is due today (limits and burying included)."""
    queue = review.queue_snapshot(user, review.get_profile(user), today)
    return queue.due + queue.repeats


def digest_context(pref: BoardPreference, today: date, now: datetime) -> dict[str, object]:
    """What one learner's digest says: cards due, their place in each team this week, their streak.

    Team names and the username are written by users: they pass through ``digests.mail_text`` (the mail is
    plain text, so that is its escaping) and are never the text of a link."""
    user = pref.user
    teams = []
    for membership in Membership.objects.filter(user=user).select_related("team").order_by("team__name"):
        place = boards.team_rank(membership.team, user.pk, now)
        if place is not None:
            teams.append({"name": digests.mail_text(membership.team.name), "rank": place, "ordinal": _ordinal(place)})
    return {
        "name": digests.mail_text(user.get_username()),
        "due": _due_today(user, today),
        "teams": teams,
        "streak": _streak(user, today),
        "review_url": settings.SITE_URL + reverse("cards:review"),
        "unsubscribe_url": unsubscribe_url(user.pk),
    }


def _streak(user: AbstractBaseUser, today: date) -> int:
    """The dashboard's streak (``cards.review.streak_days``): days with a review, ending today or yesterday."""
    days = ReviewLog.objects.filter(user=user, review_day__gte=today - timedelta(days=review.STREAK_LOOKBACK_DAYS))
    days = days.exclude(source=ReviewLog.Source.IMPORT)  # history done elsewhere is no streak here
    return review.streak_days(list(days.order_by().values_list("review_day", flat=True).distinct()), today)


def unsubscribe_url(user_id: int) -> str:
    """An absolute one-click link that turns this learner's digest off: signed, so it needs no login."""
    token = signing.dumps(user_id, salt=UNSUBSCRIBE_SALT)
    return settings.SITE_URL + reverse("teams:unsubscribe", args=[token])


def send_daily_digests(now: datetime | None = None) -> int:
    """Email each opted-in learner once per learner day, after ``DIGEST_HOUR`` local time, at the address they
    confirmed (``teams.digests``) and nowhere else. Returns emails sent.

    Each learner's mail is independent: a send that fails gives the day back (the next hourly run tries again)
    and never stops the others.
    """
    now = now or timezone.now()
    prefs = list(BoardPreference.objects.filter(daily_digest=True).select_related("user"))
    clocks = activity.clocks_for([p.user_id for p in prefs])
    sent = 0
    for pref in prefs:
        clock = clocks[pref.user_id]
        today = clock.today(now)
        if not digests.mailable(pref) or now.astimezone(clock.zone).hour < DIGEST_HOUR:
            continue
        # Claim the day first: a second run (or a concurrent worker) changes no row and sends nothing.
        if BoardPreference.objects.filter(pk=pref.pk).exclude(last_digest_on=today).update(last_digest_on=today) != 1:
            continue
        try:
            _send_digest(pref, today, now)
        except OSError:  # smtplib's errors and a refused connection alike
            logger.exception("daily digest to user %s failed; it is tried again next hour", pref.user_id)
            BoardPreference.objects.filter(pk=pref.pk, last_digest_on=today).update(last_digest_on=pref.last_digest_on)
            continue
        sent += 1
    return sent


def _send_digest(pref: BoardPreference, today: date, now: datetime) -> None:
    """In the learner's own language (their settings' choice, else the site's default): no browser asks here."""
    chosen = Profile.objects.filter(user_id=pref.user_id).values_list("language", flat=True).first()
    with translation.override(chosen or settings.LANGUAGE_CODE):
        context = digest_context(pref, today, now)
        body = render_to_string("teams/digest_email.txt", context)
        subject = ngettext("%(n)d card due today", "%(n)d cards due today", context["due"]) % {"n": context["due"]}
    headers = {  # RFC 2369 and RFC 8058: mail clients show an unsubscribe button that works in one click
        "List-Unsubscribe": f"<{context['unsubscribe_url']}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }
    EmailMessage(subject, body, None, [pref.user.email], headers=headers).send()


def team_subject(team: Team) -> calibrating.Subject:
    """A team's calibration: every member's log, scored with FSRS's default parameters against 0.9."""
    members = tuple(sorted(team.memberships.values_list("user_id", flat=True)))
    return calibrating.Subject("team", team.pk, members, None, 0, 0.9)


@shared_task(name="teams.tasks.calibrate_team")
def calibrate_team(team_id: int) -> int:
    """The team's calibration report, computed and cached for its page on the scoring worker (``SCORING_QUEUE``):
    seconds of CPU for a large team, never on a grading worker or in a request."""
    team = Team.objects.filter(pk=team_id).first()
    return 0 if team is None else calibrating.compute(team_subject(team)).reviews


def want_team_calibration(team_id: int) -> bool:
    return calibrating.want(
        "team", team_id, lambda countdown: calibrate_team.apply_async((team_id,), countdown=countdown)
    )


def want_calibrations(user_ids: set[int]) -> None:
    """These learners' logs grew: their reports and their teams' are wanted (``cards.calibrating``, step 3)."""
    for user_id in sorted(user_ids):
        card_tasks.want_learner_calibration(user_id)
    teams = Membership.objects.filter(user_id__in=user_ids).values_list("team_id", flat=True).distinct()
    for team_id in sorted(teams):
        want_team_calibration(team_id)


@shared_task(name="teams.tasks.calibrate_teams_due")
def calibrate_teams_due() -> int:
    """Nightly: every team report missing from the cache (a first one, or one the cache dropped)."""
    computed = 0
    for team in Team.objects.all():
        subject = team_subject(team)
        if not calibrating.is_current(subject):
            calibrating.compute(subject)
            computed += 1
    return computed


@shared_task(name="teams.tasks.rollover_seasons")
def rollover_seasons_task() -> int:
    return rollover_seasons()


@shared_task(name="teams.tasks.send_daily_digests")
def send_daily_digests_task() -> int:
    return send_daily_digests()


@shared_task(name="teams.tasks.rebuild_boards")
def rebuild_boards_task() -> dict[str, int]:
    """Recompute the rollup and the Redis boards from ReviewLog and Submission (the source of truth)."""
    report = services.rebuild_all(dry_run=False)
    logger.info("rebuilt boards: %s", report)
    return report


@shared_task(name="teams.tasks.refresh_touched_days", ignore_result=True)
def refresh_touched_days_task() -> int:
    """Beat's every-second tick: recompute the learner days that facts marked (``cards.touched``). The reviews
    behind those marks also change the learners' calibration reports and their teams': those are wanted."""
    learners = services.touched_learners()
    done = services.refresh_touched_days()
    if learners:
        want_calibrations(learners)
    return done
