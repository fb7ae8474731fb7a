"""Fixtures for the grader tests: a drill in the database, and a real Celery worker on Redis.

The worker machinery (``Workers``, ``shared_database``, ``celery_on_redis``) is shared with the
other suites in tests/conftest.py; this module only says which queues and limits graders need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client

from cards.models import Card, Note
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill, Submission
from jobs.models import GraderHeartbeat
from tests.conftest import Workers

__all__ = ["Workers", "RIGHT", "WRONG", "HIDDEN_WRONG", "CRASH", "drill_text", "graded_submission"]


ADD_ONE = """\
slug = "add-one"
title = "Add one"
prompt_zh = "给张量的每个元素加一。"
prompt_en = "Add one to every element of a tensor."
entry_point = "solution"
starter = "def solution(x):\\n    pass\\n"
reference = "def solution(x):\\n    return x + 1\\n"
device = "{device}"

[source]
note = "pytorch-basics.md"
heading = "Tensors"

[limits]
cpu_seconds = 10.0
wall_seconds = 10.0

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "line"
args = ["torch.randn(5, generator=g)"]

[[hidden]]
name = "random"
args = ["torch.randn(3, 4, generator=g)"]
repeat = 2
"""

RIGHT = "def solution(x):\n    return x + 1\n"
WRONG = "def solution(x):\n    return x + 2\n"
HIDDEN_WRONG = "def solution(x):\n    return x + 1 if x.dim() == 1 else x\n"  # passes the 1-D cases: the visible ones
CRASH = "def solution(x):\n    return x + undefined_name\n"


def drill_text(device: str = "cpu") -> str:
    return ADD_ONE.replace("{device}", device)


def graded_submission(user: User, drill: Drill, status: str, at: datetime, kind: str = "submit") -> Submission:
    """A final submission stored directly (no grading): for tests about what a learner's rows add up to."""
    return Submission.objects.create(
        user=user,
        drill=drill,
        code="x",
        kind=kind,
        seed=1,
        drill_version=drill.version,
        status=status,
        verdict={"status": status},
        queued_at=at,
        finished_at=at,
    )


@pytest.fixture
def note(db: None) -> Note:
    return Note.objects.create(
        slug="pytorch-basics", path="notes/pytorch-basics.md", title="PyTorch basics", content="# x", content_hash="0"
    )


@pytest.fixture
def make_drill(note: Note) -> Callable[..., Drill]:
    """Store a drill (and its card) from TOML text, as ``import_drills`` would."""

    def make(text: str | None = None, *, device: str = "cpu") -> Drill:
        text = text or drill_text(device)
        spec = parse_drill(text, "notes/drills/add-one.toml")
        card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
        return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))

    return make


@pytest.fixture
def drill(make_drill: Callable[..., Drill]) -> Drill:
    return make_drill()


@pytest.fixture
def grader_online(db: None) -> GraderHeartbeat:
    """A grading process that beat just now and consumes both queues (no real worker needed)."""
    return GraderHeartbeat.objects.create(
        name="test-host:1", queues=["grade_cpu", "grade_gpu"], device="cpu", health={"state": "ok"}
    )


@pytest.fixture
def learner(db: None) -> User:
    return User.objects.create_user("learner", password="x")


@pytest.fixture
def client_for(learner: User) -> Client:
    """A browser signed in as ``learner``."""
    client = Client()
    client.force_login(learner)
    return client


# ------------------------------------------------------------------------------ integration
# The worker fixtures live in tests/conftest.py; graders' workers consume both grading queues
# and take over a dead claim soon, so a killed grade comes back within the test's patience.
# They run on one host without a GPU, as make run does: cuda drills are graded on the CPU.
GRADER_ENV = {"GRADER_STALE_AFTER": "30", "GRADER_CPU_FALLBACK": "1"}


@pytest.fixture(scope="module")
def workers(shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    pool = Workers(
        shared_database,
        celery_on_redis,
        tmp_path_factory.mktemp("celery-logs"),
        "grade_cpu,grade_gpu,counterexample",
        GRADER_ENV,
    )
    try:
        yield pool
    finally:
        pool.stop_all()
