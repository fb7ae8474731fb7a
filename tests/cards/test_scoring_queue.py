"""Fits and calibration reports never run on a grading worker (issue 36: two learners' "fit now" pushed a
victim's verdict from 0.3 s to 25-32 s). A fit's message goes to ``settings.SCORING_QUEUE``, and in every
way the site is run (`make run`'s supervisord, docker compose, Kubernetes) the workers that grade do not
consume that queue, and the one that does runs one job at a time at a low CPU priority."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.test import TestCase
from django.urls import reverse
from supervisor.options import ServerOptions

from cards import tasks
from tests.cards.factories import make_user
from tests.cards.test_optimising import log_reviews
from tests.conftest import published_tasks

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def grading_queues() -> set[str]:
    """Every queue a grading worker consumes: the two grading queues and the housekeeping one."""
    return {settings.GRADER_QUEUE_CPU, settings.GRADER_QUEUE_GPU, settings.GRADER_QUEUE_COUNTEREXAMPLE, "celery"}


class FitMessageTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", scheduler="fsrs")

    def test_it_sends_a_fit_now_to_the_scoring_queue_only(self) -> None:
        self.client.force_login(self.user)
        with published_tasks() as sent, self.captureOnCommitCallbacks(execute=True):
            self.client.post(reverse("cards:optimise"))
        self.assertEqual([(m.task, m.queue) for m in sent], [("cards.tasks.optimise_parameters", "scoring")])
        self.assertNotIn(sent[0].queue, grading_queues())

    def test_it_sends_beats_fits_and_the_daily_look_to_the_scoring_queue(self) -> None:
        log_reviews(self.user, cards=260, reviews_each=21)  # 5,200 scored: a fit is due
        with published_tasks() as sent, self.captureOnCommitCallbacks(execute=True):
            tasks.optimise_due.apply_async()
            tasks.optimise_due()
        self.assertEqual(
            [(m.task, m.queue) for m in sent],
            [("cards.tasks.optimise_due", "scoring"), ("cards.tasks.optimise_parameters", "scoring")],
        )


# ------------------------------------------------------------------------------ the processes


Worker = tuple[list[str], dict[str, str]]  # the command, and the variables set for it alone


def celery_workers_in_supervisord(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Worker]:
    for name in ("log", "run"):
        (tmp_path / name).mkdir()
    env = {"QUIZSITE_VAR_DIR": str(tmp_path), "RUN_BIN": "/venv/bin", "RUN_HOST": "127.0.0.1", "RUN_PORT": "8000"}
    env |= {"RUN_BROKER_SERVER": "/bin/valkey-server", "RUN_BROKER_SOCKET": str(tmp_path / "run" / "v.sock")}
    env |= {"RUN_WORKER_CONCURRENCY": "2", "RUN_WEB_WORKERS": "2"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    options = ServerOptions()
    options.realize(args=["-c", str(REPO / "scripts" / "supervisord.conf")])
    configs = [p for group in options.process_group_configs for p in group.process_configs]
    programs = {p.name: (shlex.split(p.command), dict(p.environment or {})) for p in configs}
    return {name: w for name, w in programs.items() if "worker" in w[0] and any("celery" in a for a in w[0])}


def celery_workers_in_compose() -> dict[str, Worker]:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
    return {
        name: (
            [str(arg).split(":-", 1)[1].rstrip("}") if str(arg).startswith("${") else str(arg) for arg in argv],
            {key: str(value) for key, value in service.get("environment", {}).items()},
        )
        for name, service in services.items()
        if "worker" in (argv := service.get("command") or []) and "celery" in argv
    }


def celery_workers_in_k8s() -> dict[str, Worker]:
    found = {}
    for path in sorted((REPO / "deploy" / "k8s").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document and document["kind"] == "Deployment":
                container = document["spec"]["template"]["spec"]["containers"][0]
                argv = [str(arg) for arg in container.get("command", [])]
                if "worker" in argv and "celery" in argv:
                    env = {item["name"]: str(item["value"]) for item in container.get("env", [])}
                    found[document["metadata"]["name"]] = (argv, env)
    return found


def queues_of(argv: list[str]) -> set[str]:
    return set(argv[argv.index("-Q") + 1].split(","))


def option(argv: list[str], *names: str) -> str:
    index = next(i for i, arg in enumerate(argv) if arg in names)
    return argv[index + 1]


def check_workers(workers: dict[str, Worker]) -> None:
    scoring = [name for name, (argv, _) in workers.items() if settings.SCORING_QUEUE in queues_of(argv)]
    assert len(scoring) == 1, workers
    argv, env = workers[scoring[0]]
    assert queues_of(argv) == {settings.SCORING_QUEUE}, "the scoring worker takes nothing else"
    assert argv[:3] == ["nice", "-n", "19"], "at the lowest CPU priority"
    assert option(argv, "--concurrency", "-c") == "1" and option(argv, "--max-tasks-per-child") == "1"
    assert env.get("CELERY_WORKER_POOL") == "prefork", "time limits hold only under prefork"
    for name, (other, other_env) in workers.items():
        if name != scoring[0]:
            assert queues_of(other) <= grading_queues(), name
            assert other_env.get("CELERY_WORKER_POOL", "threads") == "threads", name


def test_no_grading_program_of_make_run_consumes_the_scoring_queue(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    workers = celery_workers_in_supervisord(monkeypatch, tmp_path)
    assert set(workers) == {"worker", "counterexamples", "scoring"}
    check_workers(workers)
    assert "scoring" in (REPO / "scripts" / "run.sh").read_text().split("ctl start worker ")[1].split("\n")[0]


def test_no_grading_service_of_docker_compose_consumes_the_scoring_queue() -> None:
    workers = celery_workers_in_compose()
    assert set(workers) == {"worker-cpu", "worker-gpu", "worker-scoring"}
    check_workers(workers)


def test_no_grading_deployment_consumes_the_scoring_queue() -> None:
    workers = celery_workers_in_k8s()
    assert set(workers) == {"worker-cpu", "worker-gpu", "worker-scoring"}
    check_workers(workers)


def test_it_routes_every_scoring_task_to_the_scoring_queue() -> None:
    from quizsite.celery import app

    names: list[Any] = [name for name in settings.CELERY_TASK_ROUTES if name.startswith(("cards.", "teams.calib"))]
    assert {"cards.tasks.optimise_parameters", "cards.tasks.optimise_due"} <= set(names)
    for name in names:
        assert app.amqp.router.route({}, name)["queue"].name == settings.SCORING_QUEUE, name
