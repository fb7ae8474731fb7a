"""deploy/k8s: every manifest valid offline, and wired as the code expects.

Kubernetes kinds are checked against the API's own OpenAPI schemas for the oldest supported Kubernetes
minor we target, strictly (an unknown or misspelt field fails), with the schemas that kubernetes-validate
ships, so no cluster and no network are needed. KEDA's kinds are custom resources that it does not know:
they are checked against the part of KEDA 2's CRDs these manifests use (``KEDA_SCHEMAS``), just as
strictly. Then the cross-checks a schema cannot make: queue names, the GPU request, prefetch, and the
cooldown and termination grace against the longest verdict a bundled drill can take.
"""

from __future__ import annotations

import copy
import re
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.conf import settings

from graders.drills.schema import parse_drill
from graders.sandbox.exchange import RESULT_GRACE

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
KUBERNETES = "1.30.0"  # the oldest minor still supported upstream when these were written
SECRET = "quizsite-secrets"

_INT = {"type": "integer", "minimum": 0}
_NAMED = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}},
    "additionalProperties": False,
}
_METADATA = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "labels": {"type": "object"}},
    "additionalProperties": False,
}
# The redis scaler's metadata keys (keda.sh/docs/2.x/scalers/redis-lists): anything else is a typo KEDA ignores.
REDIS_METADATA = {
    "type": "object",
    "required": ["listName"],
    "properties": {
        key: {"type": "string"}
        for key in (
            "address", "addressFromEnv", "host", "hostFromEnv", "port", "portFromEnv", "passwordFromEnv",
            "usernameFromEnv", "listName", "listLength", "activationListLength", "databaseIndex", "enableTLS",
            "unsafeSsl",
        )
    },
    "additionalProperties": False,
}  # fmt: skip


def keda_kind(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The schema of a KEDA object whose ``spec`` follows ``spec``."""
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "keda.sh/v1alpha1"},
            "kind": {"const": kind},
            "metadata": _METADATA,
            "spec": spec,
        },
    }


KEDA_SCHEMAS: dict[str, dict[str, Any]] = {
    "ScaledObject": keda_kind(
        "ScaledObject",
        {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "additionalProperties": False,
            "properties": {
                "scaleTargetRef": _NAMED,
                "pollingInterval": _INT,
                "cooldownPeriod": _INT,
                "minReplicaCount": _INT,
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "advanced": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "horizontalPodAutoscalerConfig": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {"behavior": {"type": "object"}, "name": {"type": "string"}},
                        }
                    },
                },
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "additionalProperties": False,
                        "properties": {
                            "type": {"const": "redis"},
                            "metadata": REDIS_METADATA,
                            "authenticationRef": _NAMED,
                        },
                    },
                },
            },
        },
    ),
    "TriggerAuthentication": keda_kind(
        "TriggerAuthentication",
        {
            "type": "object",
            "required": ["secretTargetRef"],
            "additionalProperties": False,
            "properties": {
                "secretTargetRef": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["parameter", "name", "key"],
                        "additionalProperties": False,
                        "properties": {k: {"type": "string"} for k in ("parameter", "name", "key")},
                    },
                }
            },
        },
    ),
}


def documents() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) for every manifest of the folder but the kustomization."""
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    return found


def problems(document: dict[str, Any]) -> list[str]:
    """Why ``document`` is not a valid object of its kind (empty when it is)."""
    kind = document.get("kind", "")
    if kind in KEDA_SCHEMAS:
        validator = jsonschema.Draft202012Validator(KEDA_SCHEMAS[kind])
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    try:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'/'.join(map(str, exc.absolute_path))}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [str(exc)]
    return []


@cache
def by_kind_and_name() -> dict[tuple[str, str], dict[str, Any]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in documents()}


def deployment(name: str) -> dict[str, Any]:
    return by_kind_and_name()[("Deployment", name)]


def container(name: str) -> dict[str, Any]:
    containers = deployment(name)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def worker_queues(name: str) -> list[str]:
    command = container(name)["command"]
    return command[command.index("-Q") + 1].split(",")


def config() -> dict[str, str]:
    return by_kind_and_name()[("ConfigMap", "quizsite-config")]["data"]


def longest_verdict_seconds() -> float:
    """The longest a bundled drill's job can run: its wall limit plus the sandbox's grace for the result."""
    walls = [
        parse_drill(path.read_text(encoding="utf-8"), str(path)).limits.wall_seconds
        for path in settings.GRADER_DRILLS_DIR.rglob("*.toml")
    ]
    assert len(walls) > 10
    return max(walls) + RESULT_GRACE


@pytest.mark.parametrize(("name", "document"), documents(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_it_is_a_valid_object_of_its_kind(name: str, document: dict[str, Any]) -> None:
    assert problems(document) == [], name


def test_it_fails_the_check_when_a_field_is_misspelt_or_mistyped() -> None:
    """The check can fail: one broken field in each kind of schema."""
    web = copy.deepcopy(deployment("web"))
    web["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    scaled = copy.deepcopy(by_kind_and_name()[("ScaledObject", "worker-gpu")])
    scaled["spec"]["triggers"][0]["metadata"]["listname"] = "grade_gpu"
    scaled["spec"]["cooldownPeriod"] = "300"
    assert problems(web) and len(problems(scaled)) >= 2


def test_it_lists_every_manifest_in_the_kustomization() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = set(kustomization["resources"])
    present = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    images = {image["name"] for image in kustomization["images"]}
    used = {container(name)["image"] for name in ("web", "beat", "worker-cpu", "worker-gpu", "worker-scoring")}
    assert used <= images


def test_it_keeps_cuda_drills_to_the_gpu_workers() -> None:
    cpu, gpu = settings.GRADER_QUEUE_CPU, settings.GRADER_QUEUE_GPU
    assert set(worker_queues("worker-cpu")) == {cpu, "celery", settings.GRADER_QUEUE_COUNTEREXAMPLE}
    assert worker_queues("worker-gpu") == [gpu]
    assert config()["GRADER_CPU_FALLBACK"] == "0"
    gpu_limits = container("worker-gpu")["resources"]["limits"]
    assert gpu_limits["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in str(container("worker-cpu")["resources"])
    command = container("worker-gpu")["command"]
    assert command[command.index("--concurrency") + 1] == "1"  # one worker process per GPU


def test_it_scales_each_grading_deployment_on_the_lists_of_the_queues_it_consumes() -> None:
    """Celery's Redis transport keeps a queue's waiting messages in a list of the queue's name, unprefixed
    unless CELERY_KEY_PREFIX is set (then KEDA would watch empty lists)."""
    assert "CELERY_KEY_PREFIX" not in config()
    for name in ("worker-cpu", "worker-gpu"):
        scaled = by_kind_and_name()[("ScaledObject", name)]["spec"]
        assert scaled["scaleTargetRef"]["name"] == name
        lists = [trigger["metadata"]["listName"] for trigger in scaled["triggers"]]
        assert sorted(lists) == sorted(worker_queues(name)), name
        for trigger in scaled["triggers"]:
            assert trigger["authenticationRef"]["name"] == "quizsite-redis"
    auth = by_kind_and_name()[("TriggerAuthentication", "quizsite-redis")]["spec"]["secretTargetRef"]
    assert {ref["name"] for ref in auth} == {SECRET}


def test_it_prefetches_one_message_per_thread_so_kedas_count_is_the_waiting_work() -> None:
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1 and settings.CELERY_TASK_ACKS_LATE


def test_it_removes_no_worker_while_its_last_job_may_still_run() -> None:
    longest = longest_verdict_seconds()
    for name in ("worker-cpu", "worker-gpu"):
        scaled = by_kind_and_name()[("ScaledObject", name)]["spec"]
        window = scaled["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
        assert scaled["cooldownPeriod"] > 10 * longest
        assert window["stabilizationWindowSeconds"] > 10 * longest
        grace = deployment(name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace > longest + settings.CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT + 10, name
    assert int(config()["GRADER_STALE_AFTER"]) > longest  # a live job is never taken over


def test_it_names_the_worker_nodes_its_liveness_probes_ping() -> None:
    for name, node in (("worker-cpu", "cpu"), ("worker-gpu", "gpu"), ("worker-scoring", "scoring")):
        command = container(name)["command"]
        command = command[command.index("worker") :]  # after `nice -n 19` for the scoring worker
        assert command[command.index("-n") + 1] == f"{node}@%h"
        probe = shlex.split(container(name)["livenessProbe"]["exec"]["command"][-1])
        assert probe[probe.index("-d") + 1] == f"{node}@$HOSTNAME"


def test_it_sets_only_variables_the_settings_read() -> None:
    source = (REPO / "quizsite" / "settings.py").read_text(encoding="utf-8")
    read = set(
        re.findall(r"""(?:os\.getenv|os\.environ\.get|envint|envbool|envlist|envrate)\(\s*["']([A-Z0-9_]+)""", source)
    )
    read |= {"WEB_CONCURRENCY", "GRADER_DEVICE"}  # gunicorn's, and graders.warm_pool's
    env_names = set(config())
    for name in ("web", "worker-gpu"):
        env_names |= {item["name"] for item in container(name).get("env", [])}
    assert env_names - read == set()


def test_it_runs_every_container_unprivileged_from_the_one_secret() -> None:
    for (kind, name), document in by_kind_and_name().items():
        if kind not in ("Deployment", "Job"):
            continue
        pod = document["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for item in pod["containers"]:
            assert item["securityContext"]["readOnlyRootFilesystem"] is True, name
            assert item["securityContext"]["capabilities"]["drop"] == ["ALL"], name
            sources = [source.get("secretRef", source.get("configMapRef"))["name"] for source in item["envFrom"]]
            assert sources == ["quizsite-config", SECRET], name
    beat = deployment("beat")["spec"]
    assert (beat["replicas"], beat["strategy"]["type"]) == (1, "Recreate")  # never two beats
