"""The drill hub shows the fitted difficulty beside the label, and where learners disagree with the label."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from cards.models import Course
from graders.models import Drill, DrillDifficulty, LearnerSkill
from jobs.status import Status
from teams.models import Membership, Team
from tests.graders.conftest import drill_text, graded_submission

pytestmark = pytest.mark.django_db


def fitted(drill: Drill, *, band: str, disagreement: int = 0, attempts: int = 50) -> DrillDifficulty:
    return DrillDifficulty.objects.create(
        drill=drill,
        difficulty=1.2,
        standard_error=0.3,
        attempts=attempts,
        passed=min(12, attempts),
        quantile=0.9 if band else None,
        band=band,
        disagreement=disagreement,
        fitted_at=timezone.now(),
    )


def hub_page(client: Client) -> str:
    return client.get(reverse("graders:hub")).content.decode()


def test_it_shows_the_fitted_band_beside_the_authored_label(client_for: Client, drill: Drill) -> None:
    fitted(drill, band="hard")
    page = hub_page(client_for)
    assert "Medium</span>" in page  # the author's label stays
    assert 'data-fitted-difficulty="hard"' in page and "learners: Hard" in page
    assert "Fitted from 50 learners' first attempts, 12 accepted" in page
    assert "data-label-disagrees" not in page


def test_it_shows_nothing_below_the_minimum_of_attempts(client_for: Client, drill: Drill) -> None:
    fitted(drill, band="", attempts=7)
    page = hub_page(client_for)
    assert "data-fitted-difficulty" not in page and "learners:" not in page


def test_a_learner_sees_only_a_quiet_marker_where_the_label_disagrees(client_for: Client, drill: Drill) -> None:
    fitted(drill, band="hard", disagreement=DrillDifficulty.Disagreement.HARDER)
    page = hub_page(client_for)
    assert 'class="label-disagrees-mark" data-label-disagrees="1"' in page
    assert "harder than its label" not in page


def test_staff_are_told_which_way_the_label_is_wrong(client_for: Client, learner: User, drill: Drill) -> None:
    learner.is_staff = True
    learner.save(update_fields=["is_staff"])
    fitted(drill, band="easy", disagreement=DrillDifficulty.Disagreement.EASIER)
    page = hub_page(client_for)
    assert 'class="badge label-disagrees" data-label-disagrees="-1">easier than its label' in page


def test_a_courses_editor_is_told_and_its_members_are_not(
    make_drill: Callable[..., Drill], drill: Drill, learner: User
) -> None:
    course = Course.objects.create(slug="team-course", title="Team course")
    team = Team.objects.create(slug="team", name="Team", course=course)
    note = drill.card.note
    note.course = course
    note.save(update_fields=["course"])
    fitted(drill, band="hard", disagreement=DrillDifficulty.Disagreement.HARDER)
    editor, member = User.objects.create_user("editor"), User.objects.create_user("member")
    Membership.objects.create(team=team, user=editor, role=Membership.Role.EDITOR)
    Membership.objects.create(team=team, user=member, role=Membership.Role.MEMBER)
    pages = {}
    for user in (editor, member):
        client = Client()
        client.force_login(user)
        pages[user.username] = hub_page(client)
    assert "harder than its label</span>" in pages["editor"]
    assert "harder than its label" not in pages["member"] and "label-disagrees-mark" in pages["member"]


def test_the_fitted_rows_cost_no_query_per_drill(
    client_for: Client, make_drill: Callable[..., Drill], drill: Drill, django_assert_max_num_queries: Callable
) -> None:
    fitted(drill, band="hard", disagreement=DrillDifficulty.Disagreement.HARDER)
    with django_assert_max_num_queries(20) as few:
        hub_page(client_for)
    for i in range(5):
        more = make_drill(drill_text().replace('slug = "add-one"', f'slug = "more-{i}"'))
        fitted(more, band="easy", disagreement=DrillDifficulty.Disagreement.EASIER)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = hub_page(client_for)
    assert page.count("data-label-disagrees=") == 6


def skilled(user: User, skill: float, *, attempts: int = 8) -> LearnerSkill:
    return LearnerSkill.objects.create(user=user, skill=skill, attempts=attempts, passed=3, fitted_at=timezone.now())


def test_a_learner_sees_their_chance_of_solving_an_untried_drill_first_try(
    client_for: Client, learner: User, drill: Drill
) -> None:
    fitted(drill, band="hard")  # difficulty 1.2
    skilled(learner, 1.2 + 0.8473)  # sigmoid(0.8473) = 0.70
    page = hub_page(client_for)
    assert 'data-first-try-chance="70"' in page and "you: about 70% first try" in page
    assert "data-your-skill" in page and "Your first tries so far: 3 of 8 drills accepted." in page


def test_the_chance_is_not_shown_once_tried_below_the_minimum_or_without_a_fitted_drill(
    client_for: Client, learner: User, make_drill: Callable[..., Drill], drill: Drill
) -> None:
    unfitted = make_drill(drill_text().replace('slug = "add-one"', 'slug = "unfitted"'))
    fitted(drill, band="hard")
    row = skilled(learner, 0.5, attempts=LearnerSkill.MIN_ATTEMPTS - 1)
    assert "data-first-try-chance" not in hub_page(client_for) and "data-your-skill" not in hub_page(client_for)
    row.attempts = LearnerSkill.MIN_ATTEMPTS
    row.save(update_fields=["attempts"])
    page = hub_page(client_for)
    assert page.count("data-first-try-chance") == 1 and "data-your-skill" in page
    graded_submission(learner, drill, Status.WRONG_ANSWER, timezone.now())  # tried: the first try is history
    assert "data-first-try-chance" not in hub_page(client_for)
    assert unfitted.pk


def test_a_learners_skill_is_theirs_alone(client_for: Client, learner: User, drill: Drill) -> None:
    fitted(drill, band="hard")
    other = User.objects.create_user("other")
    skilled(other, 2.0)
    assert "data-first-try-chance" not in hub_page(client_for) and "data-your-skill" not in hub_page(client_for)
    client = Client()
    client.force_login(other)
    assert 'data-first-try-chance="69"' in hub_page(client)  # sigmoid(0.8)


def test_the_admin_lists_the_labels_to_revisit(drill: Drill) -> None:
    fitted(drill, band="hard", disagreement=DrillDifficulty.Disagreement.HARDER)
    client = Client()
    client.force_login(User.objects.create_superuser("admin", password="x"))
    page = client.get("/admin/graders/drilldifficulty/?disagreement__exact=1").content.decode()
    assert "add-one" in page and "harder than its label" in page
