"""Production settings: ``manage.py check --deploy`` is clean with production variables, and JSON logs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quizsite.jsonlog import JsonFormatter

# Each starts manage.py in a fresh process (seconds each), never the test database: the PostgreSQL pass runs them.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# Long and varied enough for security.W009; used only by these subprocesses.
PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "k8#Zp2!vQ9rT4@wL6$yN1^mB3&xC7*eH5%jU0(fG)sD-aR=tY+iO",
    "ALLOWED_HOSTS": "quiz.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://quiz.example.com",
    "SITE_URL": "https://quiz.example.com",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """manage.py with only PATH and the given variables, as a fresh container would start it."""
    clean = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=clean, capture_output=True, text=True, timeout=120
    )


def test_it_passes_the_deploy_check_with_production_variables() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_fails_the_deploy_check_when_https_hardening_is_turned_off() -> None:
    env = {**PRODUCTION_ENV, "SECURE_SSL_REDIRECT": "0", "SESSION_COOKIE_SECURE": "0", "SECURE_HSTS_SECONDS": "0"}
    result = manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode == 1
    for check in ("security.W004", "security.W008", "security.W012"):
        assert check in result.stderr


def test_it_refuses_to_start_without_a_secret_key_or_with_a_bad_log_format() -> None:
    result = manage("check", DEBUG="0", ALLOWED_HOSTS="quiz.example.com")
    assert result.returncode == 1 and "SECRET_KEY must be set" in result.stderr
    assert "Traceback" not in result.stderr and "set DEBUG=1" in result.stderr  # a message, not a traceback
    result = manage("check", **PRODUCTION_ENV, LOG_FORMAT="xml")
    assert result.returncode == 1 and "LOG_FORMAT must be plain or json" in result.stderr
    result = manage("check", **PRODUCTION_ENV, TASK_LOG_LEVEL="loud")
    assert result.returncode == 1 and "TASK_LOG_LEVEL must be one of DEBUG, INFO" in result.stderr


def test_it_refuses_to_start_in_production_without_a_site_url() -> None:
    env = {key: value for key, value in PRODUCTION_ENV.items() if key != "SITE_URL"}
    result = manage("check", **env)
    assert result.returncode == 1 and "SITE_URL must be set when DEBUG is off" in result.stderr


def test_the_site_url_follows_make_runs_host_and_port(tmp_path: Path) -> None:
    """scripts/run.sh passes HOST and PORT as RUN_HOST and RUN_PORT: the digest's links point there."""
    show = ("shell", "--no-imports", "-c", "from django.conf import settings; print(settings.SITE_URL)")
    result = manage(*show, DEBUG="1", RUN_HOST="127.0.0.1", RUN_PORT="8123", QUIZSITE_VAR_DIR=str(tmp_path))
    assert result.stdout.strip() == "http://127.0.0.1:8123", result.stderr
    result = manage(
        *show, DEBUG="1", RUN_PORT="8123", SITE_URL="https://quiz.example.com/", QUIZSITE_VAR_DIR=str(tmp_path)
    )
    assert result.stdout.strip() == "https://quiz.example.com", result.stderr


def test_a_fresh_clone_migrates_its_sqlite_database_into_a_var_folder_it_creates(tmp_path: Path) -> None:
    var = tmp_path / "fresh" / "var"
    result = manage("migrate", "--verbosity", "0", DEBUG="1", QUIZSITE_VAR_DIR=str(var))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (var / "quizsite.sqlite3").is_file()


def test_it_sets_the_level_of_celerys_per_task_lines_apart_from_the_root_logger() -> None:
    code = "import logging; print([logging.getLogger(n).getEffectiveLevel() for n in ('celery.app.trace', '')])"
    levels = {}
    for given in ("", "info"):
        result = manage("shell", "-c", code, **PRODUCTION_ENV, **({"TASK_LOG_LEVEL": given} if given else {}))
        assert result.returncode == 0, result.stderr
        levels[given] = json.loads(result.stdout.strip().splitlines()[-1])
    assert levels == {"": [logging.WARNING, logging.INFO], "info": [logging.INFO, logging.INFO]}


def test_it_writes_one_json_object_per_line_when_asked() -> None:
    code = (
        "import logging\n"
        "try:\n    1 / 0\n"
        "except ZeroDivisionError:\n"
        "    logging.getLogger('jobs.tasks').exception('grading %s failed', 7, extra={'submission': 7})\n"
    )
    result = manage("shell", "-c", code, **PRODUCTION_ENV, LOG_FORMAT="json")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("{")]
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["level"] == "ERROR" and record["logger"] == "jobs.tasks"
    assert record["message"] == "grading 7 failed" and record["submission"] == 7
    assert record["exc_info"].endswith("ZeroDivisionError: division by zero")


def test_it_keeps_a_line_whose_extra_json_cannot_hold() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "多 %s", ("字节",), None)
    record.path = Path("/tmp/a")
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert json.loads(line) | {"time": None, "process": None} == {
        "time": None,
        "level": "INFO",
        "logger": "x",
        "message": "多 字节",
        "process": None,
        "path": "/tmp/a",
    }
