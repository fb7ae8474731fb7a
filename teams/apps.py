from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cards import extensions
        from graders import extensions as drill_extensions

        from . import learning_orders, services, solutions

        # The decks page's learning order says which team's order the learner follows, and offers the others.
        extensions.register_order_section(
            "teams", "teams/snippets/decks_learning_order.html", learning_orders.order_section
        )
        # A team's course is read by its members alone.
        extensions.register_course_readers(course_readers)
        # Its owner and editors are told on the drill hub where learners disagree with a drill's label.
        extensions.register_course_editors(course_editors)
        # An invite link opened while signed out: the login and sign-up pages name the team.
        extensions.register_login_note(services.invite_note)
        # Under a drill's verdict: once it is solved, a link to the team's solutions and its teachers' comments.
        drill_extensions.register_drill_part(
            "solutions", "teams/snippets/drill_solutions_link.html", solutions.drill_part
        )


def course_readers(user_id: int) -> object:
    """The ids of the courses of the teams ``user_id`` belongs to (one indexed subquery on memberships)."""
    from .models import Team

    return Team.objects.filter(memberships__user_id=user_id, course__isnull=False).values("course_id")


def course_editors(user_id: int) -> object:
    """The ids of the courses of the teams ``user_id`` owns or edits (one indexed subquery on memberships)."""
    from .models import Membership, Team

    roles = (Membership.Role.OWNER, Membership.Role.EDITOR)
    return Team.objects.filter(memberships__user_id=user_id, memberships__role__in=roles, course__isnull=False).values(
        "course_id"
    )
