"""The production process topology of docker-compose.yml, built on this machine without Docker.

Why: the compose file wires PostgreSQL, Redis, gunicorn, one Celery worker per queue and beat
together, and the failures that matter in production (a broker restart, a database outage, a
worker killed mid-grade) happen between those processes, where no in-process test reaches. So
the fixture starts every service as a real process, all of them private to the test module:

1. a PostgreSQL cluster of its own (``initdb`` into a temporary folder, a free port, trust auth),
   never the shared server on 5432 that other suites use in parallel;
2. a redis-server of its own on a free port, append-only like the compose file's Redis, so a
   restart keeps the queued messages;
3. the compose file's one-shot ``migrate`` service: migrate, import_notes, import_drills;
4. gunicorn (2 workers), a Celery worker for ``grade_cpu,celery`` and one for ``grade_gpu``, and
   beat, each in its own process group so that a test can kill one whole and teardown kills all.

The grading timeouts and the reaper's interval are set low, so lost work comes back within seconds
instead of minutes.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import psycopg.rows
import pytest
import requests
from _pytest.nodeid import NodeId

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


PG_BIN = _postgres_bin()
REDIS_SERVER = shutil.which("redis-server")


def missing_tools() -> str:
    """Why the topology cannot be built here, or an empty string when it can."""
    if PG_BIN is None:
        return "the topology tests need PostgreSQL's initdb (/usr/lib/postgresql/*/bin)"
    if REDIS_SERVER is None:
        return "the topology tests need redis-server on the PATH"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root, the topology tests need a postgres user to own the cluster"
    return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this package's tests on one xdist worker, so the topology is built once.

    pytest-xdist 3.8 groups ``--dist loadgroup`` tests by writing ``@<group>`` into ``item._nodeid``,
    but pytest 9.2 derives ``nodeid`` from ``item._id``, so the suffix is lost and every test is
    scheduled alone. This puts it where pytest 9.2 reads it, for this package's items only.
    """
    if not getattr(config.option, "loadgroup", False):  # set in xdist workers under --dist loadgroup
        return
    here = Path(__file__).parent
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is None or "@" in item.nodeid or here not in item.path.parents:
            continue
        item._id = NodeId.parse(f"{item.nodeid}@{mark.args[0] if mark.args else 'default'}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"{what} did not happen within {timeout}s")


class Service:
    """One long-running process in its own process group, logging to a file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.command, self.env, self.log = name, command, env, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Service:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def wait_for_log(self, needle: str, timeout: float) -> None:
        def seen() -> bool:
            if not self.alive:
                raise RuntimeError(f"{self.name} exited:\n{self.tail()}")
            return needle in self.log.read_text(errors="replace")

        try:
            wait_until(seen, timeout, f"{self.name} logging {needle!r}", interval=0.1)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}:\n{self.tail()}") from None

    def kill(self) -> None:
        """SIGKILL the whole group: the worker and its sandbox processes."""
        if self.process is not None and self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, grace: float = 10) -> None:
        if self.process is None:
            return
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()
        # Children that outlived their parent (a sandbox process) still carry the group id.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


@dataclass
class PrivatePostgres:
    """A throwaway cluster: trust auth on 127.0.0.1 and a socket folder of its own."""

    root: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/quizsite"

    def _run(self, *args: str, timeout: float = 60) -> None:
        """PostgreSQL refuses to run as root, so as root the cluster belongs to the postgres user."""
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=timeout)

    def init(self) -> None:
        self.root.mkdir(mode=0o755)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"
        )
        self.start()
        self._run(str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "quizsite")

    def start(self) -> None:
        # Durability buys nothing in a cluster that lives for one test module.
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-o",
            options,
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=quizsite", autocommit=True)


@dataclass
class PrivateRedis:
    """An append-only redis-server on a free port: like the compose file's, a restart keeps the queues."""

    root: Path
    port: int = field(default_factory=free_port)
    service: Service | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "yes", "--dir", str(self.root), "--daemonize", "no"]
        self.service = Service("redis", command, dict(os.environ), self.root / "redis.log").start()
        wait_until(self.ping, 10, "redis answering PING")

    def ping(self) -> bool:
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.2, socket_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM: redis flushes the append-only file and exits, as `docker compose restart` does."""
        if self.service is not None:
            self.service.stop(grace=10)


@dataclass
class Topology:
    root: Path
    pg: PrivatePostgres
    redis: PrivateRedis
    env: dict[str, str]
    web_url: str = ""
    services: dict[str, Service] = field(default_factory=dict)

    def service(self, name: str, command: list[str]) -> Service:
        generation = sum(1 for key in self.services if key.split("#")[0] == name)
        log = self.root / f"{name}-{generation}.log"
        service = Service(name, command, self.env, log).start()
        self.services[f"{name}#{generation}"] = service
        return service

    def start_worker(self, queues: str) -> Service:
        """``celery worker`` as in the compose file, named after its queues, one thread."""
        name = "cpu" if "grade_cpu" in queues else "gpu"
        command = [PYTHON, "-m", "celery", "-A", "quizsite", "worker", "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h"]
        command += ["-Q", queues, "-c", "1", "-l", "INFO"]
        return self.service(f"worker-{name}", command)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def live(self, name: str) -> Service:
        """The newest started service of that name."""
        return [s for key, s in self.services.items() if key.split("#")[0] == name][-1]


def topology_env(root: Path, pg: PrivatePostgres, redis_url: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_", "COV_"))}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "quizsite.settings",
        "DATABASE_URL": pg.url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": f"topology-{uuid.uuid4().hex}",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SITE_URL": "http://127.0.0.1",
        "QUIZSITE_VAR_DIR": str(root / "var"),
        # Plain HTTP on loopback: no redirect to https, cookies without the Secure flag.
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_FORMAT": "plain",
        # Lost work comes back within seconds: the reaper runs every 2 s (and at every worker start).
        "GRADER_STALE_AFTER": "14",
        "GRADER_REAP_INTERVAL": "2",
        "GRADER_RATE_LIMIT": "1000",
        "GRADER_POOL_SIZE": "1",
        "GRADER_DEVICE": "cpu",
        # The grade_gpu worker stands in for a GPU host: it declares it may grade cuda drills on its CPU.
        "GRADER_CPU_FALLBACK": "1",
    }


@pytest.fixture(scope="package")
def topology() -> Iterator[Topology]:
    """Every service of docker-compose.yml, private to the module; all of it is torn down after."""
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    # Not pytest's tmp_path: its parents are 0700, and the cluster's owner (postgres) must reach it.
    root = Path(tempfile.mkdtemp(prefix="quizsite-topology-"))
    root.chmod(0o755)
    pg = PrivatePostgres(root / "pg")
    redis_dir = root / "redis"
    redis_dir.mkdir()
    redis = PrivateRedis(redis_dir)
    topo = Topology(root, pg, redis, topology_env(root, pg, redis.url))
    try:
        pg.init()
        redis.start()
        start_services(topo)
        yield topo
    finally:
        for service in reversed(list(topo.services.values())):
            service.stop(grace=5)
        redis.stop()
        with contextlib.suppress(subprocess.SubprocessError):
            pg.stop("immediate")
        if os.getenv("KEEP_TOPOLOGY") != "1":
            shutil.rmtree(root, ignore_errors=True)


def start_services(topo: Topology) -> None:
    """The compose file's order: migrate (one shot), then web, the workers and beat together."""
    topo.manage("migrate", "--noinput")
    topo.manage("import_notes", "notes/")
    topo.manage("import_drills")
    port = free_port()
    topo.web_url = f"http://127.0.0.1:{port}"
    web = topo.service(
        "web", [PYTHON, "-m", "gunicorn", "quizsite.wsgi", "-w", "2", "-b", f"127.0.0.1:{port}", "--timeout", "30"]
    )
    cpu = topo.start_worker("grade_cpu,celery")
    gpu = topo.start_worker("grade_gpu")
    beat_schedule = topo.root / "celerybeat-schedule"
    beat = topo.service(
        "beat", [PYTHON, "-m", "celery", "-A", "quizsite", "beat", "-l", "INFO", "-s", str(beat_schedule)]
    )
    web.wait_for_log("Booting worker", 30)
    for worker in (cpu, gpu):
        worker.wait_for_log(" ready.", 90)
    beat.wait_for_log("beat: Starting", 30)


CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Browser:
    """A learner's HTTP session against gunicorn: a cookie jar and the CSRF token of the last form."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.http = requests.Session()

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.http.get(self.base + path, timeout=30, **kwargs)

    def post(
        self, path: str, data: dict[str, str], *, form_page: str | None = None, token: str = "", **kwargs: Any
    ) -> requests.Response:
        """POST like the page's form: the token comes from ``form_page`` (or is given)."""
        if form_page is not None:
            page = self.get(form_page)
            match = CSRF_INPUT.search(page.text)
            assert match, f"no CSRF token on {form_page} ({page.status_code})"
            token = match.group(1)
        headers = {"Referer": self.base + (form_page or path)}
        return self.http.post(
            self.base + path, data={**data, "csrfmiddlewaretoken": token}, headers=headers, timeout=30, **kwargs
        )

    def sign_up(self, username: str, password: str) -> None:
        """The signup page logs the new learner in; a second login through the login page proves the password."""
        response = self.post(
            "/accounts/signup/",
            {"username": username, "password1": password, "password2": password},
            form_page="/accounts/signup/",
            allow_redirects=False,
        )
        assert response.status_code == 302, response.text[:2000]
        self.http.cookies.clear()
        response = self.post(
            "/accounts/login/",
            {"username": username, "password": password},
            form_page="/accounts/login/",
            allow_redirects=False,
        )
        assert response.status_code == 302, response.text[:2000]
        assert "sessionid" in self.http.cookies

    def review_one(self, quality: int = 4) -> tuple[str, requests.Response | None]:
        """Open /review/ and press a rating button: returns the card's uuid and the answer.

        The answer is None when the review page itself could not be had; a page without a
        rating form (a drill card first in the queue) fails the test.
        """
        page = self.get("/review/")
        if page.status_code != 200:
            return "", None
        form = RATE_FORM.search(page.text)
        assert form, f"no rating form on /review/:\n{page.text[:3000]}"
        version = VERSION_INPUT.search(page.text, form.end())
        token = CSRF_INPUT.search(page.text)
        assert version and token
        data = {"quality": str(quality), "version": version.group(1), "duration_ms": "1500"}
        return form.group(2), self.post(form.group(1), data, token=token.group(1))

    def submit_drill(self, slug: str, code: str) -> requests.Response:
        """The drill page's Submit button (a plain form post, answered with a redirect)."""
        return self.post(
            f"/drills/{slug}/submit/",
            {"code": code, "kind": "submit"},
            form_page=f"/drills/{slug}/",
            allow_redirects=False,
        )


RATE_FORM = re.compile(r'action="(/review/([0-9a-f-]{36})/rate/)"')
VERSION_INPUT = re.compile(r'name="version" value="(\d+)"')
SUBMISSION_URL = re.compile(r"/drills/submissions/([0-9a-f-]{36})/")
FINAL = ("accepted", "wrong_answer", "runtime_error", "time_limit", "memory_limit", "output_limit", "rejected")
FINAL += ("internal_error",)


def submission_uuid(response: requests.Response) -> str:
    match = SUBMISSION_URL.search(response.headers.get("Location", ""))
    assert response.status_code == 302 and match, f"{response.status_code}: {response.text[:2000]}"
    return match.group(1)


def reference_code(topo: Topology, slug: str) -> str:
    with topo.pg.connect() as db:
        row = db.execute("SELECT reference_code FROM graders_drill WHERE slug = %s", [slug]).fetchone()
    assert row, slug
    return str(row[0])


def submission_rows(topo: Topology, username: str) -> list[dict[str, Any]]:
    """One learner's submissions as stored, oldest first (psycopg on the private cluster)."""
    query = (
        "SELECT s.id, s.uuid::text AS uuid, s.status, s.finished_at, s.worker, s.attempts, s.verdict "
        "FROM graders_submission s JOIN auth_user u ON u.id = s.user_id WHERE u.username = %s ORDER BY s.id"
    )
    with topo.pg.connect() as db, db.cursor(row_factory=psycopg.rows.dict_row) as cursor:
        return cursor.execute(query, [username]).fetchall()


def wait_final(topo: Topology, username: str, expected: int, timeout: float) -> list[dict[str, Any]]:
    """Wait until the learner has ``expected`` submissions, all with a final status; returns them."""
    rows: list[dict[str, Any]] = []

    def done() -> bool:
        nonlocal rows
        rows = submission_rows(topo, username)
        return len(rows) == expected and all(row["status"] in FINAL for row in rows)

    try:
        wait_until(done, timeout, f"{expected} final verdicts", interval=0.2)
    except TimeoutError:
        pending = [(r["id"], r["status"], r["attempts"]) for r in rows if r["status"] not in FINAL]
        raise AssertionError(f"{len(rows)} of {expected} rows stored, still pending: {pending}") from None
    return rows


def review_logs(topo: Topology, username: str) -> list[tuple[str, int]]:
    """(card uuid, quality) of each ReviewLog row of the learner, oldest first."""
    query = (
        "SELECT c.uuid::text, r.quality FROM cards_reviewlog r JOIN cards_card c ON c.id = r.card_id "
        "JOIN auth_user u ON u.id = r.user_id WHERE u.username = %s ORDER BY r.id"
    )
    with topo.pg.connect() as db:
        return [(str(uuid_), int(quality)) for uuid_, quality in db.execute(query, [username]).fetchall()]


@pytest.fixture
def browser(topology: Topology) -> Browser:
    return Browser(topology.web_url)
