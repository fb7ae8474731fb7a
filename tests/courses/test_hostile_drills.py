"""Hostile authors (issue 35, item 3, drills): an editor is trusted no more than a learner.

- every size and count is capped per course (drafts, drills, bytes, cases, solutions, limits, checks per hour
  and their sandbox seconds);
- an editor writes only their own course: never the bundled course, never another team's (whose drafts are
  404 for them, tests/courses/test_drill_views.py), whatever slug or note their drill file names;
- a drill's case expressions run only in the sandbox (``graders.sandbox.casemaker``, in a runner's jail under
  the drill's limits): one that names a file, an import or a private attribute is refused when the file is read,
  and one that allocates, loops or reaches for a file through torch gets a failed check with a clear message
  through a real worker, which goes on checking afterwards.

"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone, translation

from courses.drill_views import team_course
from graders.authoring import drafts
from graders.models import Drill, DrillCheck, DrillDraft
from teams import services
from tests.cards.factories import make_note, make_user
from tests.conftest import Workers
from tests.courses.test_drill_views import DOUBLE, NOTE, CourseDrillTestCase


def with_example(expression: str) -> str:
    """DOUBLE whose example calls the entry point on ``expression``: the reference runs on it in every check."""
    return DOUBLE.replace('args = ["torch.tensor([1.0, 2.0])"]', f"args = [{expression!r}]").replace(
        'name = "small"', 'name = "hostile"'
    )


class CapTests(CourseDrillTestCase):
    def now(self) -> Any:
        return timezone.now()

    @override_settings(COURSE_MAX_DRILL_BYTES=200)
    def test_it_refuses_a_drill_file_over_the_courses_bytes(self) -> None:
        response = self.client_for(self.editor).post(self.url("drill_new_toml"), {"text": DOUBLE}, follow=True)
        self.assertContains(response, "a course&#x27;s drill file may have 200", status_code=400)
        self.assertEqual(DrillDraft.objects.count(), 0)
        draft = DrillDraft.objects.create(course=self.course, text="x")
        with self.assertRaisesMessage(drafts.Refused, "may have 200"):
            drafts.save_text(draft, self.editor, DOUBLE)

    @override_settings(COURSE_MAX_DRILL_DRAFTS=1)
    def test_it_refuses_a_draft_over_the_courses_count(self) -> None:
        self.draft()
        with self.assertRaisesMessage(drafts.Refused, "The course has 1 drafts"):
            self.draft()

    @override_settings(COURSE_MAX_CASES=2)
    def test_it_refuses_to_check_a_drill_with_too_many_cases(self) -> None:
        with self.assertRaisesMessage(drafts.Refused, "The drill has 3 cases (repeats counted)"):
            drafts.request_check(self.draft(), self.editor, self.now())
        self.assertEqual(DrillCheck.objects.count(), 0)

    @override_settings(COURSE_MAX_SOLUTIONS=1)
    def test_it_refuses_to_check_a_drill_with_too_many_solutions(self) -> None:
        with self.assertRaisesMessage(drafts.Refused, "2 wrong and alternative solutions; at most 1"):
            drafts.request_check(self.draft(), self.editor, self.now())

    def test_it_refuses_limits_over_what_a_course_may_ask(self) -> None:
        greedy = DOUBLE.replace("[source]", "[limits]\ncpu_seconds = 60.0\nmemory_mb = 65536\n\n[source]")
        with self.assertRaisesMessage(drafts.Refused, "limits.cpu_seconds may be at most 5"):
            drafts.request_check(self.draft(greedy), self.editor, self.now())

    @override_settings(COURSE_CHECKS_PER_HOUR=1)
    def test_it_refuses_checks_over_the_courses_hourly_count(self) -> None:
        drafts.request_check(self.draft(), self.editor, self.now())
        other = self.draft(DOUBLE.replace('title = "Double it"', 'title = "Twice"'))
        with self.assertRaisesMessage(drafts.Refused, "asked for 1 checks in the last hour"):
            drafts.request_check(other, self.editor, self.now())
        drafts.request_check(other, self.editor, self.now() + timedelta(hours=1, seconds=1))  # an hour later

    @override_settings(COURSE_CHECK_SECONDS_PER_HOUR=60)
    def test_it_refuses_checks_over_the_courses_hourly_sandbox_seconds(self) -> None:
        first = drafts.request_check(self.draft(), self.editor, self.now())
        DrillCheck.objects.filter(pk=first.pk).update(sandbox_ms=61_000)
        other = self.draft(DOUBLE.replace('title = "Double it"', 'title = "Twice"'))
        with self.assertRaisesMessage(drafts.Refused, "used 61 s of sandbox time in the last hour"):
            drafts.request_check(other, self.editor, self.now())

    @override_settings(COURSE_MAX_DRILLS=1)
    def test_it_refuses_a_drill_over_the_courses_count(self) -> None:
        first = self.draft()
        self.check(first)
        drafts.publish(first, self.editor, self.now())
        second = self.draft(DOUBLE.replace('slug = "double"', 'slug = "triple"'))
        self.check(second)
        with self.assertRaisesMessage(drafts.Refused, "The course has 1 drills, its most"):
            drafts.publish(second, self.editor, self.now())


class ReachTests(CourseDrillTestCase):
    @pytest.mark.filterwarnings("ignore")
    def test_it_never_publishes_into_the_bundled_course(self) -> None:
        from cards.models import bundled_course

        bundled = bundled_course()
        make_note(slug="basics", course=bundled, content=NOTE, path="basics.md")
        draft = DrillDraft.objects.create(course=bundled, author=self.editor, text=DOUBLE)  # as if one were made
        with self.assertRaisesMessage(drafts.Refused, "The bundled course is published from the repository"):
            drafts.publish(draft, self.editor, timezone.now())
        self.assertFalse(Drill.objects.filter(slug="double").exists())

    def test_a_slug_that_names_another_course_is_no_slug(self) -> None:
        other = team_course(services.create_team(self.outsider, "Gradient Gang", "UTC"))
        for slug in (other.qualified("double"), "pytorch--double"):
            with self.assertRaisesMessage(drafts.Refused, "'slug': must be lowercase words joined by '-'"):
                drafts.request_check(
                    self.draft(DOUBLE.replace('"double"', f'"{slug}"', 1)), self.editor, timezone.now()
                )

    def test_two_courses_publishing_one_slug_get_two_drills(self) -> None:
        gang = services.create_team(self.outsider, "Gradient Gang", "UTC")
        theirs = team_course(gang)
        make_note(slug=theirs.qualified("basics"), course=theirs, content=NOTE, path="basics.md")
        for course, author in ((theirs, self.outsider), (self.course, self.editor)):
            draft = drafts.new_draft(course, author, DOUBLE)
            self.check(draft)
            drafts.publish(draft, author, timezone.now())
        stored = dict(Drill.objects.values_list("slug", "card__note__course"))
        self.assertEqual(
            stored, {theirs.qualified("double"): theirs.pk, self.course.qualified("double"): self.course.pk}
        )

    def test_it_refuses_case_expressions_that_open_import_sleep_or_escape_before_anything_runs(self) -> None:
        for expression, why in (
            ("open('/etc/passwd')", "unknown name 'open'"),
            ("__import__('os').system('id')", "unknown name '__import__'"),
            ("__import__('time').sleep(30)", "unknown name '__import__'"),
            ("().__class__.__base__.__subclasses__()", "private attribute"),
            ("[c for c in ().__class__.__mro__]", "private attribute"),
        ):
            draft = self.draft(with_example(expression))
            with self.assertRaisesMessage(drafts.Refused, why):
                drafts.request_check(draft, self.editor, timezone.now())
        self.assertEqual(DrillCheck.objects.count(), 0)


# ------------------------------------------------------------------------------------------ on a worker


@pytest.fixture(scope="module")
def check_worker(shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    pool = Workers(shared_database, celery_on_redis, tmp_path_factory.mktemp("check-worker"), queues="grade_cpu")
    try:
        pool.start(concurrency=1)
        yield pool
    finally:
        pool.stop_all()


def checked_on_worker(text: str, timeout: float = 90) -> DrillCheck:
    """A team with a course; ``text`` as a draft; its check sent to the real worker; the finished row."""
    owner = make_user()
    course = team_course(services.create_team(owner, "Hostile authors", "UTC"))
    draft = drafts.new_draft(course, owner, text)
    check = drafts.request_check(draft, owner, timezone.now())  # sent to the worker on commit
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        check.refresh_from_db()
        if check.is_final:
            return check
        time.sleep(0.1)
    raise AssertionError(f"the check was not final after {timeout} s")


def failed_reference(check: DrillCheck) -> str:
    """The check ended as a report (never a crash), the reference item failed: its message."""
    assert check.status == "done", check.report
    assert check.report is not None and not check.report["passed"]
    reference = [item for item in check.report["items"] if item["kind"] == "reference"]
    assert reference and not reference[0]["passed"], check.report
    return str(reference[0]["message"])


HOSTILE = [
    pytest.param("torch.empty(2**40)", ("hostile", "memory", "allocate"), id="allocates"),
    pytest.param(
        "torch.from_file('/etc/passwd', size=8, dtype=torch.uint8)",
        ("hostile", "from_file"),
        id="reads-a-file",
    ),
    pytest.param("torch.tensor([float(sum(range(10**12)))])", ("hostile", "time"), id="loops"),
]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("expression", "named"), HOSTILE)
def test_a_hostile_case_expression_fails_its_check_with_a_clear_message(
    check_worker: Workers, expression: str, named: tuple[str, ...]
) -> None:
    message = failed_reference(checked_on_worker(with_example(expression)))
    assert any(word in message for word in named), message
    assert check_worker.current.process.poll() is None  # the worker is still there


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
def test_the_worker_goes_on_checking_after_hostile_drills(check_worker: Workers) -> None:
    checked_on_worker(with_example("torch.empty(2**40)"))
    check = checked_on_worker(DOUBLE)
    assert check.report is not None and check.report["passed"], check.report
    assert check_worker.current.process.poll() is None


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
def test_a_case_expression_writes_no_file_of_the_host(check_worker: Workers, tmp_path: Any) -> None:
    """Judged on what it achieved: the file the expression saves is nowhere on the host afterwards."""
    target = tmp_path / "written-by-a-case"
    checked_on_worker(with_example(f"torch.save(torch.ones(1), {str(target)!r})"))
    assert not target.exists()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
def test_a_reference_that_answers_differently_each_call_never_reaches_the_cache_of_a_published_drill(
    check_worker: Workers,
) -> None:
    """A reference keeping state between calls would make the cached answer one call's accident: every
    learner's right answer judged against it. The check calls the reference twice on each case and refuses."""
    stateful = DOUBLE.replace(
        'reference = "def solution(x):\\n    return x * 2\\n"',
        'reference = "calls = [0]\\ndef solution(x):\\n    calls[0] += 1\\n    return x * 2 + calls[0]\\n"',
    )
    assert stateful != DOUBLE
    check = checked_on_worker(stateful)
    assert "two different answers" in failed_reference(check)
    with translation.override("en"), pytest.raises(drafts.Refused, match="last check of this text failed"):
        drafts.publish(check.draft, check.draft.author, timezone.now())
    assert Drill.objects.filter(slug="double").count() == 0
