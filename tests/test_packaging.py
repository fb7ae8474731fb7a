"""Images and requirements: the web stays free of torch, pins stay exact, images run unprivileged,
and .env.example documents every variable the settings read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKERFILES = ("web.Dockerfile", "worker.Dockerfile", "worker-gpu.Dockerfile")
# What only the grading worker needs: torch and the packages only torch pulls in, and the sandbox's own.
WORKER_ONLY = {
    "torch", "pyseccomp", "restrictedpython", "numpy", "sympy", "mpmath", "networkx", "fsspec",
    "filelock", "jinja2", "markupsafe", "packaging", "pandas", "tqdm",
}  # fmt: skip
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==[A-Za-z0-9.+!-]+$")


def pins(name: str) -> dict[str, str]:
    """``{normalised name: line}`` for a requirements file's own lines (``-r`` includes excluded)."""
    found = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-r ")):
            continue
        match = _PIN.match(line)
        assert match, f"{name}: {line!r} is not an exact pin (name==version)"
        found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = line
    return found


def test_it_pins_every_requirement_exactly_and_keeps_the_worker_pins_apart() -> None:
    web, worker = pins("requirements-web.txt"), pins("requirements.txt")
    assert "-r requirements-web.txt" in (REPO / "requirements.txt").read_text().splitlines()
    extra = {name for name in worker if name.replace("-", "") not in {w.replace("-", "") for w in WORKER_ONLY}}
    assert not extra, f"{sorted(extra)}: the web image installs only requirements-web.txt; pin these there"
    assert not {name for name in web if name in WORKER_ONLY}, "requirements-web.txt must not pull in torch & co"
    assert worker["torch"] == "torch==2.13.0"
    assert not set(web) & set(worker)


@pytest.mark.slow
def test_it_never_imports_torch_in_the_web_process() -> None:
    """Every URL, view, Celery task module and management command, imported as gunicorn and beat would."""
    code = (
        "import django, sys\n"
        "django.setup()\n"
        "from django.urls import get_resolver\n"
        "def walk(patterns):\n"
        "    for p in patterns:\n"
        "        walk(p.url_patterns) if hasattr(p, 'url_patterns') else p.callback\n"
        "walk(get_resolver().url_patterns)\n"
        "import quizsite.wsgi, quizsite.celery\n"
        "from quizsite.celery import app\n"
        "app.loader.import_default_modules()\n"
        "from django.core.management import get_commands, load_command_class\n"
        "for name, app_name in get_commands().items():\n"
        "    load_command_class(app_name, name)\n"
        "heavy = ('torch', 'numpy', 'RestrictedPython', 'sympy')\n"
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "quizsite.settings", "DEBUG": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout, result.stdout


@pytest.mark.parametrize("name", DOCKERFILES)
def test_it_runs_each_image_as_an_unprivileged_user_without_baked_secrets(name: str) -> None:
    text = (REPO / "docker" / name).read_text()
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in ("root", "0"), name
    assert text.index("USER ") < text.index("\nCMD ")
    for line in re.findall(r"^(?:ENV|ARG)\s.*$", text, re.MULTILINE):
        assert not re.search(r"SECRET|PASSWORD|TOKEN", line), f"{name}: {line}"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_it_compiles_every_top_level_package_into_each_image(name: str) -> None:
    """Found on disk, so a package moved to the top level (``jobs``, ``fastpath``) is compiled the day it lands."""
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").exists()} - {"tests", "bench"}
    compiled = re.search(r"python -m compileall -q ([\w ]+)", (REPO / "docker" / name).read_text())
    assert compiled and set(compiled.group(1).split()) == packages, name


def test_it_installs_torch_only_in_the_worker_images_from_the_pinned_version() -> None:
    web = "\n".join(
        line for line in (REPO / "docker" / "web.Dockerfile").read_text().splitlines() if not line.startswith("#")
    )
    assert "requirements-web.txt" in web and "requirements.txt " not in web and "torch" not in web.lower()
    cpu = (REPO / "docker" / "worker.Dockerfile").read_text()
    gpu = (REPO / "docker" / "worker-gpu.Dockerfile").read_text()
    for text in (cpu, gpu):
        assert "grep -E '^torch==' requirements.txt" in text and "pip install -r requirements.txt" in text
    assert "download.pytorch.org/whl/cpu" in cpu and "assert not torch.version.cuda" in cpu
    assert "assert torch.version.cuda" in gpu


def test_it_keeps_local_state_and_secrets_out_of_the_build_context() -> None:
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".env", "var", "node_modules"} <= set(ignored)


def test_it_documents_every_variable_the_settings_read() -> None:
    settings = (REPO / "quizsite" / "settings.py").read_text()
    read = set(
        re.findall(
            r"""(?:os\.getenv|os\.environ\.get|envint|envbool|envlist|envrate)\(\s*["']([A-Z0-9_]+)["']""",
            settings,
        )
    )
    documented = set(re.findall(r"^#?\s*([A-Z0-9_]+)=", (REPO / ".env.example").read_text(), re.MULTILINE))
    assert len(read) > 20
    assert read - documented == set(), "document these in .env.example"
