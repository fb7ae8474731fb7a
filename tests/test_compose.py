"""docker-compose.yml: valid against the Compose specification's JSON schema, and wired as deploy.md says.

The schema is the one check-jsonschema vendors (``vendor.compose-spec``, from compose-spec/compose-spec),
so this runs without Docker and without a network.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
APP_SERVICES = ("migrate", "web", "worker-cpu", "worker-gpu", "worker-scoring", "beat")
WORKERS = ("worker-cpu", "worker-gpu")


@cache
def compose_schema() -> dict[str, Any]:
    source = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    return json.loads(source.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(compose_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def queues(service: dict[str, Any]) -> set[str]:
    command = service["command"]
    value = command[command.index("-Q") + 1]
    if value.startswith("${"):  # ${CPU_WORKER_QUEUES:-grade_cpu,grade_gpu,celery}: the default
        value = value.split(":-", 1)[1].rstrip("}")
    return set(value.split(","))


def test_it_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    assert schema_errors(compose) == []


def test_it_fails_the_schema_when_a_service_is_malformed(compose: dict[str, Any]) -> None:
    broken = copy.deepcopy(compose)
    broken["services"]["web"]["depends_on"]["db"]["condition"] = "service_ready"
    broken["services"]["web"]["healthcheck"]["retries"] = "three"
    broken["services"]["beat"]["restartt"] = "always"
    errors = schema_errors(broken)
    assert len(errors) >= 3, errors


def test_it_defines_the_services(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {
        "db", "redis", "migrate", "web", "worker-cpu", "worker-gpu", "worker-scoring", "beat"
    }  # fmt: skip


def test_it_routes_each_worker_to_its_grading_queue(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "grade_cpu" in queues(services["worker-cpu"])
    assert queues(services["worker-gpu"]) == {"grade_gpu"}
    assert "celery" in queues(services["worker-cpu"])  # housekeeping tasks (teams, reaper)
    assert services["worker-gpu"]["command"][services["worker-gpu"]["command"].index("--concurrency") + 1] == "1"
    assert queues(services["worker-scoring"]) == {"scoring"}  # fits and calibration (tests/cards/test_scoring_queue.py)


def test_it_has_healthchecks_on_every_long_running_service_but_beat(compose: dict[str, Any]) -> None:
    for name in ("db", "redis", "web", *WORKERS, "worker-scoring"):
        check = compose["services"][name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and check["retries"] >= 3, name
    assert "/healthz" in (REPO / "docker" / "healthcheck.py").read_text()
    assert "inspect ping" in compose["services"]["worker-cpu"]["healthcheck"]["test"][1]


def test_it_starts_the_application_only_on_healthy_dependencies(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        depends = compose["services"][name]["depends_on"]
        assert depends["db"] == {"condition": "service_healthy"}, name
        assert depends["redis"] == {"condition": "service_healthy"}, name
        if name != "migrate":
            assert depends["migrate"] == {"condition": "service_completed_successfully"}, name


def test_it_reserves_a_gpu_for_the_gpu_worker_only(compose: dict[str, Any]) -> None:
    services = compose["services"]
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert services["worker-gpu"]["profiles"] == ["gpu"]
    assert "reservations" not in services["worker-cpu"]["deploy"]["resources"]


def test_it_locks_the_workers_down(compose: dict[str, Any]) -> None:
    for name in WORKERS:
        service = compose["services"][name]
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in service["security_opt"]
        assert "seccomp=./docker/seccomp-worker.json" in service["security_opt"]
        assert service["networks"] == ["backend"]
        assert service["deploy"]["resources"]["limits"]["memory"]
        assert service["stop_grace_period"]
    assert compose["networks"]["backend"] == {"internal": True}


def test_it_uses_a_seccomp_profile_that_allows_the_sandboxs_namespaces() -> None:
    profile = json.loads((REPO / "docker" / "seccomp-worker.json").read_text())
    denied = {name for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for name in rule["names"]}
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert {"mount", "ptrace", "bpf", "kexec_load", "init_module", "open_by_handle_at", "keyctl"} <= denied
    # graders/sandbox/jail.py: unshare(CLONE_NEWUSER|NEWNET|NEWPID), setns back, chroot, clone for runners.
    assert not {"unshare", "setns", "chroot", "clone", "clone3", "prctl", "seccomp"} & denied


def test_it_keeps_secrets_out_of_the_file(compose: dict[str, Any]) -> None:
    env = compose["x-app-env"]
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")
    assert "${POSTGRES_PASSWORD:?" in env["DATABASE_URL"]
    assert env["DEBUG"] == "0"
