"""Team pages. Every team URL starts with ``_membership``: an outsider gets 404, never 403,
so a team's existence, members and boards stay private to its members."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from cards import calibrating, revlog
from cards.models import Card, ReviewLog, default_time_zone

from . import activity, boards, digests, extensions, learning_orders, services
from .forms import (
    DefaultSchedulerForm,
    LearningOrderForm,
    PeriodForm,
    PreferenceForm,
    RenameForm,
    RoleForm,
    TeamForm,
)
from .models import BoardPreference, Membership, SeasonResult, Team
from .stats import team_charts
from .streaks import learner_day
from .tasks import DIGEST_HOUR, UNSUBSCRIBE_SALT, team_subject, want_team_calibration

HISTORY_SEASONS = 8


def _membership(request: HttpRequest, slug: str) -> Membership:
    """The requester's membership of the team, or 404 for anyone outside it."""
    membership = Membership.objects.select_related("team").filter(team__slug=slug, user_id=request.user.pk).first()
    if membership is None:
        raise Http404(_("No such team."))
    return membership


def _owner_membership(request: HttpRequest, slug: str) -> Membership:
    """Members may see the team but only owners may change it: 403 for members, 404 for outsiders."""
    membership = _membership(request, slug)
    if not membership.is_owner:
        raise PermissionDenied(_("Only an owner can do that."))
    return membership


@login_required
def index(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None, initial={"time_zone": default_time_zone()})
    if request.method == "POST" and form.is_valid():
        team = services.create_team(request.user, form.cleaned_data["name"], form.cleaned_data["time_zone"])
        messages.success(
            request, _("Team “%(name)s” created. Share the invite link to bring people in.") % {"name": team.name}
        )
        return redirect("teams:detail", slug=team.slug)
    memberships = Membership.objects.filter(user_id=request.user.pk).select_related("team").order_by("team__name")
    return render(request, "teams/index.html", {"memberships": memberships, "form": form})


@login_required
def join(request: HttpRequest, token: str) -> HttpResponse:
    try:
        team = services.team_for_invite(token)
    except services.TeamError as exc:
        return render(request, "teams/join_invalid.html", {"error": str(exc)}, status=404)
    if team.memberships.filter(user_id=request.user.pk).exists():
        return redirect("teams:detail", slug=team.slug)
    if request.method == "POST":
        services.join(team, request.user)
        want_team_calibration(team.pk)  # the team's report covers its members' reviews
        messages.success(request, _("Welcome to “%(name)s”.") % {"name": team.name})
        return redirect("teams:detail", slug=team.slug)
    return render(request, "teams/join.html", {"team": team, "token": token})


@login_required
def detail(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _membership(request, slug)
    team = membership.team
    entries = boards.team_board(team, "week", me=request.user.pk)
    history = SeasonResult.objects.filter(team=team).select_related("user").order_by("-season", "rank")
    invite_url = request.build_absolute_uri(reverse("teams:join", args=[services.invite_token(team)]))
    context = {
        "team": team,
        "membership": membership,
        "entries": entries,
        "members": team.memberships.select_related("user").order_by("joined_at", "pk"),
        "history": history[: HISTORY_SEASONS * 3],
        "invite_url": invite_url,
        "rename_form": RenameForm(initial={"name": team.name}),
        "scheduler_form": DefaultSchedulerForm(initial={"scheduler": team.default_scheduler}),
        "season": boards.team_season(team, timezone.now()),
        "order_stages": learning_orders.stages_of(team),
        "order_followers": learning_orders.follower_count(team),
        "follows_order": learning_orders.follows(team, request.user),
        "sections": extensions.team_sections(membership),  # e.g. the team's course (registered by courses)
    }
    return render(request, "teams/detail.html", context)


@login_required
def board(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _membership(request, slug)
    period = PeriodForm(request.GET).period_or_default()
    entries = boards.team_board(membership.team, period, me=request.user.pk)
    context = {"team": membership.team, "entries": entries, "period": period}
    return render(request, "teams/board.html", context)


@login_required
def stats(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _membership(request, slug)
    team = membership.team
    members = dict(team.memberships.values_list("user_id", "user__username"))
    charts = team_charts(team, members, learner_day(timezone.now(), team.zone))
    return render(request, "teams/stats.html", {"team": team, "charts": charts})


@login_required
def calibration(request: HttpRequest, slug: str) -> HttpResponse:
    """SM-2 and FSRS (default parameters) on the whole team's logs; members only, like the team's stats. Served
    from the cache; the scoring worker computes the report (``cards.calibrating``)."""
    team = _membership(request, slug).team
    shown = calibrating.page(team_subject(team))
    export_url = reverse("teams:revlog_export", args=[team.slug])
    context = {**(shown.report.context if shown.report else {}), "shown": shown, "export_url": export_url}
    return render(request, "cards/calibration.html", {**context, "whose": _("%(team)s's") % {"team": team.name}})


@login_required
def revlog_export(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The team's review log as CSV for the owner, learners named only by their join order (L1, L2...)."""
    team = _owner_membership(request, slug).team
    order = team.memberships.order_by("joined_at", "pk").values_list("user_id", flat=True)
    learners = {user_id: f"L{index}" for index, user_id in enumerate(order, start=1)}
    # Only cards the owner may see: a member's private deck, or another team's course, is named by no uuid.
    logs = ReviewLog.objects.filter(user_id__in=list(learners), card__in=Card.objects.visible_to(request.user))
    response = StreamingHttpResponse(revlog.csv_lines(revlog.revlog_rows(logs, learners)), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{team.slug}-revlog.csv"'
    return response


@login_required
@require_POST
def leave(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _membership(request, slug)
    try:
        services.leave(membership.team, request.user)
    except services.TeamError as exc:
        messages.error(request, str(exc))
        return redirect("teams:detail", slug=slug)
    want_team_calibration(membership.team_id)
    messages.success(request, _("You left “%(name)s”.") % {"name": membership.team.name})
    return redirect("teams:index")


@login_required
@require_POST
def rename(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _owner_membership(request, slug)
    form = RenameForm(request.POST)
    if form.is_valid():
        services.rename(membership.team, form.cleaned_data["name"])
        messages.success(request, _("Team renamed."))
    else:
        messages.error(request, _("A team needs a name of at most 100 characters."))
    return redirect("teams:detail", slug=slug)


@login_required
@require_POST
def default_scheduler(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _owner_membership(request, slug)
    form = DefaultSchedulerForm(request.POST)
    if form.is_valid():
        switched = services.set_default_scheduler(membership.team, form.cleaned_data["scheduler"])
        messages.success(
            request,
            ngettext(
                "Default scheduler saved; %(n)d member switched.",
                "Default scheduler saved; %(n)d members switched.",
                switched,
            )
            % {"n": switched},
        )
    else:
        messages.error(request, _("Choose SM-2 or FSRS-6."))
    return redirect("teams:detail", slug=slug)


@login_required
@require_POST
def learning_order(request: HttpRequest, slug: str) -> HttpResponse:
    """An owner moves a stage or goes back to the default order; the team's followers get it at once."""
    team = _owner_membership(request, slug).team
    form = LearningOrderForm(request.POST)
    if form.is_valid():
        copied = learning_orders.save_order(team, form.cleaned_data["order"])
        messages.success(
            request,
            ngettext(
                "Learning order saved; %(n)d member follows it.",
                "Learning order saved; %(n)d members follow it.",
                copied,
            )
            % {"n": copied},
        )
    else:
        messages.error(request, _("Learning order not changed. %(why)s") % {"why": form.error_text()})
    return redirect(reverse("teams:detail", args=[slug]) + "#learning-order")


@login_required
@require_POST
def follow_order(request: HttpRequest, slug: str) -> HttpResponse:
    """A member follows this team's learning order (instead of another team's or the default)."""
    team = _membership(request, slug).team
    learning_orders.follow(team, request.user)
    messages.success(request, _("Your new cards follow the learning order of “%(name)s”.") % {"name": team.name})
    return redirect(reverse("cards:decks") + "#learning-order")


@login_required
@require_POST
def rotate_invite(request: HttpRequest, slug: str) -> HttpResponse:
    membership = _owner_membership(request, slug)
    services.rotate_invite(membership.team)
    messages.success(request, _("New invite link made; the old one no longer works."))
    return redirect("teams:detail", slug=slug)


def _target(team: Team, member: object) -> Membership:
    return get_object_or_404(Membership.objects.select_related("user"), team=team, uuid=member)


@login_required
@require_POST
def remove_member(request: HttpRequest, slug: str, member: object) -> HttpResponse:
    membership = _owner_membership(request, slug)
    target = _target(membership.team, member)
    try:
        services.remove_member(membership.team, membership, target)
    except services.TeamError as exc:
        messages.error(request, str(exc))
    else:
        want_team_calibration(membership.team_id)
        messages.success(
            request,
            _("%(name)s was removed from the team; the invite link was renewed, so share the new one.")
            % {"name": target.user.get_username()},
        )
    return redirect("teams:detail", slug=slug)


@login_required
@require_POST
def transfer_ownership(request: HttpRequest, slug: str, member: object) -> HttpResponse:
    membership = _owner_membership(request, slug)
    target = _target(membership.team, member)
    try:
        services.transfer_ownership(membership.team, membership, target)
    except services.TeamError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("%(name)s now owns the team.") % {"name": target.user.get_username()})
    return redirect("teams:detail", slug=slug)


@login_required
@require_POST
def set_role(request: HttpRequest, slug: str, member: object) -> HttpResponse:
    """An owner names a member an editor of the team's course (who may then upload its notes), or undoes it."""
    membership = _owner_membership(request, slug)
    target = _target(membership.team, member)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("A member can be made an editor or a member."))
        return redirect("teams:detail", slug=slug)
    try:
        services.set_role(membership.team, membership, target, form.cleaned_data["role"])
    except services.TeamError as exc:
        messages.error(request, str(exc))
    else:
        done = (
            _("%(name)s is now an editor of the team's course.")
            if target.role == Membership.Role.EDITOR
            else _("%(name)s is now a member (no longer an editor).")
        )
        messages.success(request, done % {"name": target.user.get_username()})
    return redirect("teams:detail", slug=slug)


@login_required
def global_board(request: HttpRequest) -> HttpResponse:
    period = PeriodForm(request.GET).period_or_default()
    entries = boards.global_board(period, me=request.user.pk)
    opted_in = BoardPreference.objects.filter(user_id=request.user.pk, global_board=True).exists()
    return render(request, "teams/global_board.html", {"entries": entries, "period": period, "opted_in": opted_in})


@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    """The opt-ins, and the digest address with its state; turning the digest on mails a confirmation link to an
    address not yet confirmed (``teams.digests``)."""
    pref = BoardPreference.objects.filter(user_id=request.user.pk).first()
    initial = {"global_board": bool(pref and pref.global_board), "daily_digest": bool(pref and pref.daily_digest)}
    form = PreferenceForm(request.POST or None, initial=initial, user=request.user)
    if request.method == "POST" and form.is_valid():
        pref = services.set_preferences(request.user, **form.cleaned_data)
        messages.success(request, _("Preferences saved."))
        if pref.daily_digest and digests.state(request.user, pref) is digests.State.UNCONFIRMED:
            _ask_to_confirm(request)
        return redirect("teams:preferences")
    context = {
        "form": form,
        "digest_email": getattr(request.user, "email", ""),
        "digest_state": digests.state(request.user, pref),
        "digest_on": bool(pref and pref.daily_digest),
        # When it goes out: beat's hourly run sends it from this hour of the learner's own day (teams.tasks).
        "digest_hour": f"{DIGEST_HOUR:02d}:00",
        "digest_zone": activity.clock_for(request.user.pk).zone.key,
    }
    return render(request, "teams/preferences.html", context)


def _ask_to_confirm(request: HttpRequest) -> None:
    try:
        asked = digests.ask_to_confirm(request.user)
    except digests.DigestError as exc:
        messages.error(request, str(exc))
    except OSError:  # smtplib's errors and a refused connection alike
        messages.error(request, _("The confirmation email could not be sent just now; try again in a few minutes."))
    else:
        messages.info(request, asked.message())


@login_required
@require_POST
def resend_digest_confirmation(request: HttpRequest) -> HttpResponse:
    if digests.state(request.user, BoardPreference.objects.filter(user_id=request.user.pk).first()) is not (
        digests.State.CONFIRMED
    ):
        _ask_to_confirm(request)
    return redirect("teams:preferences")


@require_http_methods(["GET", "POST"])
def confirm_digest(request: HttpRequest, token: str) -> HttpResponse:
    """The confirmation link: GET asks (a mail scanner following links must not confirm anything), POST confirms.
    No login needed: the link itself, mailed to the address, is the proof of owning it."""
    try:
        _user, email = digests.address_of(token)
    except digests.DigestError as exc:
        return render(request, "teams/digest_confirm.html", {"error": str(exc)}, status=404)
    if request.method == "POST":
        digests.confirm(token)
        return render(request, "teams/digest_confirm.html", {"email": email, "done": True})
    return render(request, "teams/digest_confirm.html", {"email": email, "done": False})


@csrf_exempt  # the signed token is the credential: a mail client's one-click POST (RFC 8058) carries no CSRF token
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """The digest's unsubscribe link: GET asks (a link scanner must not unsubscribe anyone), POST turns it off."""
    try:
        user_id = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        raise Http404(_("This unsubscribe link is not valid.")) from None
    if request.method == "POST":
        BoardPreference.objects.filter(user_id=user_id).update(daily_digest=False)
        return render(request, "teams/unsubscribed.html", {"done": True})
    return render(request, "teams/unsubscribed.html", {"done": False})
