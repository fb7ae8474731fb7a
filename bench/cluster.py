"""Graders on many hosts, on one machine: network namespaces as hosts, one Redis and one PostgreSQL.

Why: production grading runs on several hosts (some with GPUs) behind one broker and one database, and
what matters there (throughput as hosts are added, a host killed or cut off mid-load) happens between
machines, where no single-process test reaches. This builds that shape with Linux network namespaces:

1. a hub namespace with a bridge (10.231.0.1/24) running PostgreSQL (a private cluster) and Redis, plus
   beat (the reaper's schedule); this process joins the hub too and drives the load from there;
2. N host namespaces, each joined to the bridge by a veth pair (10.231.0.11, .12, ...), each with its own
   hostname (a UTS namespace) and running the project's grading worker (bench/cluster_worker.py:
   ``celery worker`` of quizsite with its own warm sandbox pool); ``--latency-ms`` adds ``tc netem``
   delay on both ends of every host's link;
3. load goes in through the real submit path (``graders.attempts.submissions.submit``: the row, then the message
   on commit), one learner per submission so each accepted verdict rates exactly one card;
4. ``scale``: with the workers of 1, 2, 4 hosts consuming (the others' consumers cancelled), a burst of
   submissions, for real drills (CPU-bound here: every host shares this machine's cores) and for a
   device-bound stand-in (each job holds its host's one simulated device for ``--device-ms``);
5. ``kill``: every process of one host gets SIGKILL mid-load; ``partition``: one host's link goes down
   for ``--cut-s`` seconds mid-load. After each: every submission has exactly one final verdict and
   accepted ones exactly one rating, and the jobs the lost host held were graded elsewhere within
   ``GRADER_STALE_AFTER`` + 5 s (the claim's "visibility timeout") of the loss;
6. ``route``: a cuda drill waits while no host has a GPU ("no GPU grader online"), then a host that
   declares one (``GRADER_CPU_FALLBACK=1``: this machine has no GPU) takes it.

Nothing is touched outside the namespaces it makes (no address, route or forwarding change in the
machine's own namespace); every namespace, process and file it made is removed at the end, also on
Ctrl+C or SIGTERM. Needs root, ``ip``, ``tc``, ``unshare``, PostgreSQL's binaries and redis-server.

Usage: sudo .venv/bin/python bench/cluster.py [--hosts 4] [--phases scale,kill,partition,route]
       [--jobs 160] [--device-ms 200] [--latency-ms 1] [--stale-after 10] [--reap-interval 1] [--cut-s 20]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.topology.conftest import PG_BIN, REDIS_SERVER, Service  # noqa: E402

PYTHON = sys.executable
SUBNET = "10.231.0"
HUB_IP = f"{SUBNET}.1"
CLONE_NEWNET = 0x40000000
FINAL = {"accepted", "wrong_answer", "runtime_error", "time_limit", "memory_limit", "output_limit", "rejected"}
FINAL |= {"internal_error"}


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def missing() -> str:
    """Why the harness cannot run here ("" when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "unshare", "runuser"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if PG_BIN is None or REDIS_SERVER is None:
        return "PostgreSQL's binaries and redis-server are needed"
    probe = f"qzprobe{os.getpid()}"
    done = run("ip", "netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"cannot create a network namespace: {done.stderr.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return ""


def setns(path: str) -> None:
    """Move this thread (the only one yet) into the network namespace at ``path``."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


@dataclass
class Network:
    """The hub (bridge, services) and one namespace per host, all named after this run."""

    hosts: int
    latency_ms: float
    tag: str = field(default_factory=lambda: f"qz{os.getpid()}")
    made: list[str] = field(default_factory=list)
    proxy_ms: float = 0  # latency added by bench/delay_proxy.py in front of the services (no netem here)

    def describe(self) -> str:
        if self.proxy_ms:
            return f"{self.proxy_ms:g} ms each way to PostgreSQL and Redis (a delay proxy: this kernel has no netem)"
        return f"netem {self.latency_ms:g} ms each way on every host link" if self.latency_ms else "no added latency"

    @property
    def hub(self) -> str:
        return f"{self.tag}-hub"

    def host(self, index: int) -> str:
        return f"{self.tag}-h{index}"

    def host_ip(self, index: int) -> str:
        return f"{SUBNET}.{11 + index}"

    def build(self) -> None:
        self._add(self.hub)
        hub = ("ip", "-n", self.hub)
        run(*hub, "link", "set", "lo", "up")
        run(*hub, "link", "add", "br0", "type", "bridge")
        run(*hub, "addr", "add", f"{HUB_IP}/24", "dev", "br0")
        run(*hub, "link", "set", "br0", "up")
        for index in range(self.hosts):
            name = self.host(index)
            self._add(name)
            # Both ends are created inside our namespaces: nothing appears in the machine's own.
            run(*hub, "link", "add", f"v{index}", "type", "veth", "peer", "name", "eth0", "netns", name)
            run(*hub, "link", "set", f"v{index}", "master", "br0", "up")
            run("ip", "-n", name, "addr", "add", f"{self.host_ip(index)}/24", "dev", "eth0")
            run("ip", "-n", name, "link", "set", "eth0", "up")
            run("ip", "-n", name, "link", "set", "lo", "up")
            if self.latency_ms:
                self._delay(name, index)

    def _delay(self, name: str, index: int) -> None:
        """netem delay on both ends of the host's link; where the kernel has no netem, none (and say so)."""
        delay = ("netem", "delay", f"{self.latency_ms}ms")
        for namespace, device in ((name, "eth0"), (self.hub, f"v{index}")):
            done = run(
                "ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", device, "root", *delay, check=False
            )
            if done.returncode:  # no sch_netem in this kernel: the services get delay proxies instead
                self.proxy_ms, self.latency_ms = self.latency_ms, 0
                return

    def _add(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self.made.append(name)

    def cut(self, index: int, down: bool) -> None:
        run("ip", "-n", self.hub, "link", "set", f"v{index}", "down" if down else "up")

    def pids(self, name: str) -> list[int]:
        done = run("ip", "netns", "pids", name, check=False)
        return [int(pid) for pid in done.stdout.split()]

    def kill(self, name: str) -> int:
        """SIGKILL every process of the host (a host lost whole): those in its namespace and their
        descendants (the sandbox's runners live in namespaces of their own); returns how many."""
        import psutil

        pids = set(self.pids(name))
        for pid in list(pids):
            with contextlib.suppress(psutil.Error):
                pids |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    def destroy(self) -> None:
        for name in reversed(self.made):
            for _ in range(3):
                if not self.kill(name):
                    break
                time.sleep(0.2)
            run("ip", "netns", "del", name, check=False)
        self.made.clear()


@dataclass
class Services:
    """PostgreSQL, Redis and beat in the hub namespace; the workers in the hosts."""

    net: Network
    root: Path
    settings: dict[str, str]
    started: list[Service] = field(default_factory=list)
    workers: dict[int, Service] = field(default_factory=dict)

    def start_database(self) -> None:
        data = self.root / "pg"
        data.mkdir(mode=0o755)
        shutil.chown(data, "postgres", "postgres")
        as_pg = ("runuser", "-u", "postgres", "--")
        run(*as_pg, str(PG_BIN / "initdb"), "-D", str(data / "data"), "-A", "trust", "-U", "postgres", "--no-sync")
        with (data / "data" / "pg_hba.conf").open("a") as hba:  # the hosts reach it over the bridge
            hba.write(f"host all all {SUBNET}.0/24 trust\n")
        options = f"-p 5432 -k {data} -c listen_addresses={self.listen} -c fsync=off -c max_connections=200"
        start = ("ip", "netns", "exec", self.net.hub, *as_pg, str(PG_BIN / "pg_ctl"), "-D", str(data / "data"))
        run(*start, "-l", str(data / "server.log"), "-w", "-o", options, "start")
        run("ip", "netns", "exec", self.net.hub, *as_pg, str(PG_BIN / "createdb"), "-h", self.listen, "quizsite")

    def stop_database(self) -> None:
        data = self.root / "pg" / "data"
        if data.exists():
            pg_ctl = ("runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"))
            run(*pg_ctl, "-D", str(data), "-m", "immediate", "stop", check=False)

    def start_redis(self) -> None:
        command = [str(REDIS_SERVER), "--bind", self.listen, "--port", "6379", "--save", "", "--appendonly", "no"]
        command += ["--requirepass", self.settings["CLUSTER_REDIS_PASSWORD"]]  # as on a network: a password
        self.started.append(self._service("redis", self.net.hub, command))

    @property
    def listen(self) -> str:
        """Where PostgreSQL and Redis listen: on the bridge, or behind delay proxies on the hub's loopback."""
        return "127.0.0.1" if self.net.proxy_ms else HUB_IP

    def start_proxies(self) -> None:
        if not self.net.proxy_ms:
            return
        for name, port in (("proxy-postgres", 5432), ("proxy-redis", 6379)):
            command = [PYTHON, str(REPO / "bench" / "delay_proxy.py"), f"{HUB_IP}:{port}", f"127.0.0.1:{port}"]
            self.started.append(self._service(name, self.net.hub, [*command, str(self.net.proxy_ms)]))
        for port in (5432, 6379):  # this process is not in the hub yet: ask from inside it
            probe = f"import socket; socket.create_connection(('{HUB_IP}', {port}), timeout=1).close()"
            wait = ("ip", "netns", "exec", self.net.hub, PYTHON, "-c", probe)
            deadline = time.monotonic() + 15
            while run(*wait, check=False).returncode:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the delay proxy on port {port} did not start")
                time.sleep(0.2)

    def _service(self, name: str, namespace: str, command: list[str], hostname: str = "") -> Service:
        prefix = ["ip", "netns", "exec", namespace]
        if hostname:  # a host of its own: the claims and node names of its workers carry this name
            prefix += ["unshare", "--uts", "sh", "-c", f'hostname {hostname} && exec "$@"', "sh"]
        return Service(name, prefix + command, self.env(), self.root / f"{name}.log").start()

    def env(self) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_", "COV_"))}
        return {**inherited, **self.settings}

    def manage(self, *args: str) -> None:
        done = subprocess.run(
            ["ip", "netns", "exec", self.net.hub, PYTHON, "manage.py", *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")

    def start_beat(self) -> None:
        schedule = self.root / "celerybeat-schedule"
        command = [PYTHON, "-m", "celery", "-A", "quizsite", "beat", "-l", "INFO", "-s", str(schedule)]
        self.started.append(self._service("beat", self.net.hub, command))

    def start_worker(self, index: int, queues: str = "grade_cpu,celery", **env: str) -> Service:
        name = self.net.host(index)
        command = [PYTHON, "-m", "bench.cluster_worker", "worker", "-n", "grader@%h", "-Q", queues]
        command += ["-c", self.settings["CLUSTER_CONCURRENCY"], "-l", "INFO", "--without-gossip", "--without-mingle"]
        saved = dict(self.settings)
        self.settings.update(env)
        try:
            worker = self._service(f"worker-{index}", name, command, hostname=name)
        finally:
            self.settings = saved
        self.workers[index] = worker
        return worker

    def stop(self) -> None:
        for service in [*self.workers.values(), *reversed(self.started)]:
            service.stop(grace=5)
        self.stop_database()


# ------------------------------------------------------------------------------------------ the load


def django_up(settings: dict[str, str]) -> None:
    os.environ.update(settings)
    os.environ["DJANGO_SETTINGS_MODULE"] = "quizsite.settings"
    import django

    django.setup()


def learners(count: int) -> list[Any]:
    """``count`` new learners (one submission each, so each accepted verdict rates one card)."""
    from django.contrib.auth.models import User

    tag = uuid.uuid4().hex[:8]
    users = [User(username=f"c{tag}-{i}", password="!") for i in range(count)]
    return User.objects.bulk_create(users)


def drills(device: str, count: int) -> list[Any]:
    """Bundled drills of ``device``, cheapest first by source size (a mix of real work)."""
    from graders.models import Drill

    rows = list(Drill.objects.filter(device=device, active=True).select_related("card"))
    rows.sort(key=lambda drill: (len(drill.reference_code), drill.slug))
    return rows[:count]


def submit_burst(count: int, device: str = "cpu") -> list[int]:
    """``count`` submissions of reference solutions, through the real submit path, as fast as it goes."""
    from graders.attempts import submissions
    from graders.models import Submission

    mix = drills(device, 6)
    ids = []
    for index, user in enumerate(learners(count)):
        drill = mix[index % len(mix)]
        sub = submissions.submit(user, drill, drill.reference_code)
        assert isinstance(sub, Submission), sub
        ids.append(sub.pk)
    return ids


def rows(ids: list[int]) -> list[Any]:
    from graders.models import Submission

    return list(Submission.objects.filter(pk__in=ids).order_by("pk"))


def wait_final(ids: list[int], timeout: float) -> list[Any]:
    from graders.models import Submission

    deadline = time.monotonic() + timeout
    pending = Submission.objects.filter(pk__in=ids).exclude(status__in=FINAL)
    while pending.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{pending.count()} of {len(ids)} submissions not final after {timeout:.0f}s")
        time.sleep(0.1)
    return rows(ids)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@dataclass
class Burst:
    hosts: int
    mode: str
    jobs: int
    seconds: float
    p50_ms: float
    p95_ms: float
    by_host: list[int]  # verdicts per host that graded, most first

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds


def measure(ids: list[int], hosts: int, mode: str, timeout: float) -> Burst:
    """Throughput from the first submission of the burst to its last verdict (the submit loop, ~50-100/s,
    runs while the hosts grade); per-job latency from a worker's claim to the verdict (from the submit,
    it would be mostly the burst's own queue)."""
    done = wait_final(ids, timeout)
    latency = [(row.finished_at - row.claimed_at).total_seconds() * 1000 for row in done]
    span = (max(row.finished_at for row in done) - min(row.queued_at for row in done)).total_seconds()
    by_host = sorted(Counter(row.worker for row in done).values(), reverse=True)
    return Burst(hosts, mode, len(done), span, statistics.median(latency), pct(latency, 0.95), by_host)


class SteadyLoad(threading.Thread):
    """Submissions at a fixed rate, from a thread of this (hub) process, through the real path, until
    ``seconds`` after ``lost()`` is called (or ``lead + seconds`` if it never is): the load outlasts the
    wait for the moment the victim holds a job, however long a busy machine makes that wait."""

    def __init__(self, rate: float, seconds: float, lead: float = 40) -> None:
        super().__init__(name="steady-load", daemon=True)
        self.rate, self.seconds, self.lead = rate, seconds, lead
        self.ids: list[int] = []
        self.loss = threading.Event()
        self.stop_at = 0.0
        self.users = learners(int(rate * (lead + seconds)) + 1)  # made before the clock starts

    def lost(self) -> None:
        self.stop_at = time.monotonic() + self.seconds
        self.loss.set()

    def run(self) -> None:
        from django.db import connection

        from graders.attempts import submissions

        mix = drills("cpu", 6)
        started = time.monotonic()
        try:
            for index, user in enumerate(self.users):
                due = started + index / self.rate
                if due > (self.stop_at if self.loss.is_set() else started + self.lead + self.seconds):
                    break
                time.sleep(max(0.0, due - time.monotonic()))
                drill = mix[index % len(mix)]
                self.ids.append(submissions.submit(user, drill, drill.reference_code).pk)
        finally:
            connection.close()


# ------------------------------------------------------------------------------------------ checks


@dataclass
class Integrity:
    submissions: int
    not_final: int
    accepted: int
    ratings_wrong: list[int]  # accepted submissions without exactly one rating of their card
    claimed_twice: int  # rows claimed more than once (a job that may have run twice)
    lost_jobs: int  # jobs the lost host held when it went
    worst_regrade_s: float  # from the loss to the last of them finishing elsewhere
    last_verdict_s: float  # from the loss to the last verdict of the burst

    @property
    def ok(self) -> bool:
        return self.not_final == 0 and not self.ratings_wrong


def integrity(ids: list[int], held: list[int], lost_at: float) -> Integrity:
    from django.db.models import Count

    from cards.models import ReviewLog

    done = rows(ids)
    accepted = [row for row in done if row.status == "accepted"]
    ratings = {
        (row["user_id"], row["card_id"]): row["n"]
        for row in ReviewLog.objects.filter(user_id__in=[r.user_id for r in accepted], source="grader")
        .values("user_id", "card_id")
        .annotate(n=Count("id"))
    }
    wrong = [row.pk for row in accepted if ratings.get((row.user_id, row.drill.card_id), 0) != 1]
    regrade = [row.finished_at.timestamp() - lost_at for row in done if row.pk in held]
    return Integrity(
        submissions=len(done),
        not_final=sum(1 for row in done if row.status not in FINAL),
        accepted=len(accepted),
        ratings_wrong=wrong,
        claimed_twice=sum(1 for row in done if row.attempts > 1),
        lost_jobs=len(held),
        worst_regrade_s=round(max(regrade, default=0.0), 1),
        last_verdict_s=round(max(row.finished_at.timestamp() for row in done) - lost_at, 1),
    )


def held_by(ids: list[int], hostname: str) -> list[int]:
    """The submissions whose live claim names ``hostname`` (the claim token starts with the host)."""
    from graders.models import Submission

    running = Submission.objects.filter(pk__in=ids, status="running", claim_token__startswith=f"{hostname}:")
    return list(running.values_list("pk", flat=True))


# ------------------------------------------------------------------------------------------ the run


@dataclass
class Cluster:
    args: argparse.Namespace
    net: Network
    services: Services
    device_file: Path
    report: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        print(line, flush=True)  # noqa: T201 - the bench's output
        self.report.append(line)

    def set_device(self, ms: float) -> None:
        self.device_file.write_text(str(ms))

    def launch_hosts(self, count: int) -> None:
        """Start the workers of hosts 0 .. count-1 that are not running yet (without waiting for them)."""
        for index in range(count):
            if index not in self.services.workers:
                self.services.start_worker(index)

    def start_hosts(self, count: int) -> None:
        """Hosts 0 .. count-1 running and grading (those not yet started start now, together)."""
        self.launch_hosts(count)
        for index in range(count):
            self.services.workers[index].wait_for_log(" ready.", 180)
        self.wait_graders(count)

    def wait_graders(self, count: int, queue: str = "grade_cpu", timeout: float = 60) -> None:
        from jobs.heartbeat import grader_status

        deadline = time.monotonic() + timeout
        while grader_status(queue).online < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} graders online on {queue}")
            time.sleep(0.2)

    def scale(self) -> list[Burst]:
        """Bursts on 1, 2, then 4 hosts (started as they are needed: cancelling and adding consumers on
        running workers left some hosts idle on kombu's Redis transport), each mode on the same hosts."""
        results = []
        modes = (("real drills (CPU-bound)", 0.0), (f"device-bound ({self.args.device_ms:g} ms)", self.args.device_ms))
        for active in (1, 2, 4):
            if active > self.args.hosts:
                continue
            self.start_hosts(active)
            for mode, ms in modes:
                self.set_device(ms)
                wait_final(submit_burst(4 * active), 120)  # warm: every host has graded
                ids = submit_burst(self.args.jobs)
                burst = measure(ids, active, mode, timeout=600)
                results.append(burst)
                self.say(
                    f"| {mode} | {active} | {burst.jobs} | {burst.rate:.1f} | {burst.p50_ms:.0f} | {burst.p95_ms:.0f} "
                    f"| {' / '.join(map(str, burst.by_host))} |"
                )
        self.set_device(0)
        self.start_hosts(self.args.hosts)
        return results

    def lose_a_host(self, how: str) -> Integrity:
        """Under steady load below what the other hosts can take, the last host is killed (every process,
        SIGKILL) or cut off for ``--cut-s`` seconds, at a moment it holds a job."""
        victim = self.args.hosts - 1
        name = self.net.host(victim)
        self.set_device(self.args.device_ms)
        seconds = self.args.load_s or self.args.cut_s + self.args.stale_after + 15
        load = SteadyLoad(self.rate(), seconds)
        load.start()
        time.sleep(3)
        held: list[int] = []
        while not held and load.is_alive():  # the load goes on until it is lost, up to its lead
            time.sleep(0.005)
            held = held_by(list(load.ids), name)
        lost_at = time.time()
        load.lost()
        if how == "kill":
            killed = self.net.kill(name)
            self.say(f"killed {killed} processes of {name} holding {len(held)} jobs, at {load.rate:g} submissions/s")
        else:
            self.net.cut(victim, down=True)
            self.say(f"cut {name}'s link for {self.args.cut_s:g} s while it held {len(held)} jobs, at {load.rate:g}/s")
            time.sleep(self.args.cut_s)
            self.net.cut(victim, down=False)
        load.join()
        wait_final(load.ids, timeout=300)
        time.sleep(self.args.stale_after + 3)  # a late finish of the old claim would land by now
        result = integrity(load.ids, held, lost_at)
        if how == "kill" and self.args.phases.rstrip(",").split(",")[-1] != "kill":  # back for what follows
            self.services.start_worker(victim).wait_for_log(" ready.", 180)
        self.set_device(0)
        return result

    def rate(self) -> float:
        """Half of what the hosts left after a loss can take (device-bound: one job per device time)."""
        return self.args.rate or 0.5 * max(1, self.args.hosts - 1) * 1000 / self.args.device_ms

    def route(self) -> tuple[str, float]:
        """A cuda drill waits while no host declares a GPU, then one that does takes it."""
        from graders.models import Submission
        from quizsite import health

        ids = submit_burst(1, device="cuda")
        time.sleep(3)
        waiting = Submission.objects.get(pk=ids[0]).status
        said = health.run_checks(("graders",))["checks"]["graders"].get("error", "")
        index = self.args.hosts
        started = time.monotonic()
        worker = self.services.start_worker(index, queues="grade_gpu", GRADER_CPU_FALLBACK="1")
        worker.wait_for_log(" ready.", 180)
        done = wait_final(ids, 120)[0]
        self.say(f"cuda submission before a GPU host: {waiting}; /healthz: {said!r}")
        self.say(f"after a host declaring a GPU started: {done.status} by {done.worker}")
        return said, time.monotonic() - started


def settings_for(root: Path, args: argparse.Namespace) -> dict[str, str]:
    password = uuid.uuid4().hex
    return {
        "DATABASE_URL": f"postgres://postgres@{HUB_IP}:5432/quizsite",
        "REDIS_URL": f"redis://:{password}@{HUB_IP}:6379/0",
        "CLUSTER_REDIS_PASSWORD": password,
        "SECRET_KEY": f"cluster-{uuid.uuid4().hex}",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SITE_URL": "http://127.0.0.1",
        "QUIZSITE_VAR_DIR": str(root / "var"),
        "LOG_FORMAT": "plain",
        "LOG_LEVEL": "WARNING",
        "GRADER_POOL_SIZE": str(args.pool),
        "GRADER_DEVICE": "cpu",
        "GRADER_CPU_FALLBACK": "0",
        "GRADER_STALE_AFTER": str(args.stale_after),
        "GRADER_REQUEUE_AFTER": str(args.stale_after),
        "GRADER_REAP_INTERVAL": str(args.reap_interval),
        "GRADER_HEARTBEAT_SECONDS": "1",
        "GRADER_RATE_LIMIT": "1000000",
        "CLUSTER_CONCURRENCY": str(args.concurrency),
        "CLUSTER_DEVICE_FILE": str(root / "device-ms"),
    }


@contextlib.contextmanager
def cluster(args: argparse.Namespace) -> Iterator[Cluster]:
    """Everything built, and everything removed afterwards, however this ends (Ctrl+C and SIGTERM too)."""
    reason = missing()
    if reason:
        raise SystemExit(f"cluster: {reason}")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    root = Path(tempfile.mkdtemp(prefix="quizsite-cluster-"))
    root.chmod(0o755)
    home = f"/proc/{os.getpid()}/ns/net"
    home_fd = os.open(home, os.O_RDONLY)
    net = Network(args.hosts + 1, args.latency_ms)  # one spare host for the GPU of the route phase
    settings = settings_for(root, args)
    services = Services(net, root, settings)
    (root / "device-ms").write_text("0")
    try:
        net.build()
        services.start_database()
        services.start_redis()
        services.start_proxies()
        setns(f"/run/netns/{net.hub}")  # this process drives the load from the hub
        services.manage("migrate", "--noinput")
        made = Cluster(args, net, services, root / "device-ms")
        first = 1 if "scale" in args.phases else args.hosts
        made.launch_hosts(first)  # torch imports overlap the imports of the notes and drills
        services.start_beat()
        services.manage("import_notes", "notes/")
        services.manage("import_drills")
        django_up(settings)
        made.start_hosts(first)
        yield made
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not stop the clean-up
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.setns(home_fd, CLONE_NEWNET)
        os.close(home_fd)
        services.stop()
        net.destroy()
        if os.getenv("KEEP_CLUSTER") != "1":
            shutil.rmtree(root, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=4, help="grading hosts (namespaces)")
    parser.add_argument("--phases", default="scale,kill,partition,route", help="which measurements, in order")
    parser.add_argument("--jobs", type=int, default=160, help="submissions per burst")
    parser.add_argument("--device-ms", type=float, default=200, help="how long a device-bound job holds the device")
    parser.add_argument("--latency-ms", type=float, default=1.0, help="netem delay on each end of every host link")
    parser.add_argument("--stale-after", type=int, default=10, help="GRADER_STALE_AFTER and GRADER_REQUEUE_AFTER")
    parser.add_argument("--reap-interval", type=int, default=1, help="GRADER_REAP_INTERVAL (beat)")
    parser.add_argument("--cut-s", type=float, default=20, help="how long the partition lasts")
    parser.add_argument("--load-s", type=float, default=0, help="steady load's length (0: cut + stale + 15 s)")
    parser.add_argument(
        "--rate", type=float, default=0, help="submissions/s while a host is lost (0: half of capacity)"
    )
    parser.add_argument("--pool", type=int, default=1, help="GRADER_POOL_SIZE of each host")
    parser.add_argument("--concurrency", type=int, default=2, help="worker threads per host")
    args = parser.parse_args(argv)
    phases = [phase.strip() for phase in args.phases.split(",") if phase.strip()]
    started = time.monotonic()
    try:
        failed = run_phases(args, phases)
    except KeyboardInterrupt:
        print("interrupted: every namespace, process and file made was removed", flush=True)  # noqa: T201
        return 130
    print(f"done in {time.monotonic() - started:.0f} s", flush=True)  # noqa: T201
    return 1 if failed else 0


def run_phases(args: argparse.Namespace, phases: list[str]) -> bool:
    failed = False
    with cluster(args) as made:
        made.say(f"{args.hosts} hosts, {made.net.describe()}, {os.cpu_count()} cores shared by all")
        if "scale" in phases:
            made.say("| work | hosts | jobs | verdicts/s | claim-to-verdict p50 ms | p95 ms | verdicts per host |")
            made.say("| --- | --- | --- | --- | --- | --- | --- |")
            made.scale()
        for how in ("kill", "partition"):
            if how in phases:
                result = made.lose_a_host(how)
                bound = args.stale_after + 5
                good = result.ok and result.worst_regrade_s <= bound
                failed |= not good
                made.say(f"{how}: {result} -> {'PASS' if good else 'FAIL'} (regraded within {bound} s)")
        if "route" in phases:
            said, _ = made.route()
            failed |= "no GPU grader online" not in said
    return failed


if __name__ == "__main__":
    sys.exit(main())
