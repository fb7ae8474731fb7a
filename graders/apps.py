from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class GradersConfig(AppConfig):
    name = "graders"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The job kinds (jobs.lifecycle runs them by name), this process's sandbox pool for them (the job
        # task asks jobs.pools) and the worker-process hooks (they fire only in Celery workers: a warm
        # sandbox pool and a heartbeat in each process that runs jobs).
        from cards import extensions
        from jobs import pools

        from . import warm_pool, worker  # noqa: F401
        from .difficulty import task  # noqa: F401  (the nightly difficulty refit)
        from .kinds import checks, counterexamples, examples, runs, verdicts  # noqa: F401
        from .rating import stats

        pools.provide(warm_pool.get_pool)

        # Drill cards on the review page, and the drills' section of the stats page.
        extensions.register_review_part("drill", "graders/snippets/review_drill.html", replaces_answer=True)
        extensions.register_stats_section("drills", "graders/snippets/stats_drills.html", stats.drill_section)
        # A deck's "Coding drill" filter lists the note's drills in the hub (status, difficulty, best verdict).
        extensions.register_kind_listing("drill", hub_for_note)
        # manage.py audit_cards: a bundled drill whose statement promises what its contract does not check.
        extensions.register_audit_check("drill statements that contradict their contract", drill_statement_problems)
        # An Anki export's drill card: the reference once the learner may see it, else a link to the drill.
        extensions.register_export_back("drill", drill_export_backs)
        # The review queue keeps a track's drills (the tensor puzzles) in their authored order.
        extensions.register_card_tracks(drill_tracks)


def hub_for_note(note_slug: str) -> str:
    from django.urls import reverse
    from django.utils.http import urlencode

    return f"{reverse('graders:hub')}?{urlencode({'note': note_slug})}"


def drill_statement_problems() -> list[str]:
    """ "<drill>: <problem>" for each bundled drill's statement that contradicts its contract (a new tensor, an
    in-place change or a dtype promised), by the rule that publishing a course's drill applies."""
    from graders.authoring.statement import drill_contradictions
    from graders.drills import DRILLS_DIR, load_drills

    drills = load_drills(DRILLS_DIR)
    return [f"{slug}: {problem}" for slug, drill in sorted(drills.items()) for problem in drill_contradictions(drill)]


def drill_tracks(card_ids: list[int]) -> dict[int, tuple[str, int]]:
    """{card id: (track, position)} of the active drills among ``card_ids`` that belong to a track."""
    from .models import Drill

    drills = Drill.objects.filter(active=True, card_id__in=card_ids).exclude(track="").order_by()
    return {pk: (track, place) for pk, track, place in drills.values_list("card_id", "track", "position")}


def drill_export_backs(cards: list[Any], learner: object) -> dict[int, str]:
    """Drill cards' backs in an Anki export, as Markdown. The reference only where the site would show it
    without a cost: for the operator's export, or a learner who solved the drill, gave up on it or already
    looked at its reference (``solutions_unlocked_among``); otherwise a link to the drill, so an export never
    hands out a reference that the drill page holds back (a peek there is a failed recall). Two queries for
    any number of drills: the drills, then which of them the learner has unlocked."""
    from django.conf import settings
    from django.urls import reverse
    from django.utils.translation import gettext as _

    from .models import Drill
    from .rating.reviews import solutions_unlocked_among

    drills = list(Drill.objects.filter(card__in=[card.pk for card in cards]))
    unlocked = {d.pk for d in drills} if learner is None else solutions_unlocked_among(learner, drills)  # type: ignore[arg-type]
    backs = {}
    for drill in drills:
        if drill.pk in unlocked:
            code = drill.reference_code.rstrip("\n")
            fence = "~~~~" if "```" in code else "```"
            heading = _("Reference solution (`%(entry)s`):") % {"entry": drill.entry_point}
            backs[drill.card_id] = f"{heading}\n\n{fence}python\n{code}\n{fence}\n"
        else:
            url = settings.SITE_URL + reverse("graders:drill", args=[drill.slug])
            backs[drill.card_id] = _("Solve it on quizsite: %(url)s") % {"url": url}
    return backs
