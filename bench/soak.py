"""Soak test of `make run`'s own stack: simulated learners over HTTP for a long while, the worker SIGKILLed at random.

Why: a learner's ordinary session once killed `make run`'s worker after 7 minutes (issue 13), which no short
test had shown. This drives the exact processes `make run` starts (scripts/run.sh through bench.runstack:
supervisord, the broker, gunicorn, the Celery worker and beat) through its web pages and /api/v1/ only,
so it measures what a learner meets and survives changes to the code behind the pages.

1. Start scripts/run.sh in a temporary var folder on a free port (SQLite and the embedded broker, or
   --database-url / --redis-url).
2. Each learner signs up on the web page, raises its daily limits in Settings, takes an API token, then
   until the deadline repeats, with think time between actions: a review on the web page (output and
   drill cards answered as the page asks), a review through the API, a drill on the web page (its
   examples fragment, right or wrong code, the verdict polled as the page does), "Run examples", a drill
   through the API (submit or examples), an output card answered directly.
3. --kills times, at random in the middle of the run, the worker's main process gets SIGKILL. A probe
   submission sent at that moment times the restarted worker grading again; the killed worker's pool and
   sandbox processes must all be gone by then.
4. After the deadline: wait until every submission is final, wait a redelivery window, read everything
   back over the API: each submission exactly one final verdict (the same status and finish time at
   every read, and as many rows as were made), each review stored.
5. Stop the stack as a person stops `make run` (SIGTERM to run.sh) and list whatever is left.

Prints markdown tables and exits 1 when a check fails: a 5xx, a submission without exactly one final
verdict, a review missing or extra, a worker not back within --recover seconds, a process left.

Usage: .venv/bin/python bench/soak.py [--seconds 1200] [--learners 20] [--kills 3] [--think 1.5] [--seed 13]
       [--database-url postgres://postgres@127.0.0.1:5432/quizsite_soak] [--redis-url redis://127.0.0.1:6379/9]
A database given is used as it is (the learners are new users); a Redis given gets a key prefix of this
run, deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import threading
import time
import tomllib
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.runstack import REPO, RunStack, Seen  # noqa: E402

FINAL = {"accepted", "wrong_answer", "runtime_error", "time_limit", "memory_limit", "output_limit", "rejected"}
FINAL |= {"internal_error"}
SELF_RATED = {"qa", "mapping", "cloze"}  # the kinds a learner rates; drill and output cards are rated by graders
RIGHT_SHARE = 0.7
PATIENCE = 60.0  # seconds a learner waits for a verdict before moving on (the drain waits for the rest)
OUTPUT_CARDS = "/api/v1/cards/?kind=output"  # the output cards in review
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RATE = re.compile(rf'action="(/review/{UUID}/rate/)"')
_VERSION = re.compile(r'name="version" value="(\d+)"')
_OUTPUT_FORM = re.compile(rf'action="(/[\w/-]*?({UUID})/answer/)"')
_OPEN_DRILL = re.compile(rf'href="(/drills/card/{UUID}/)" data-open-drill')
_SUBMIT = re.compile(r'action="/drills/([\w-]+)/submit/"')
_EXAMPLES_POLL = re.compile(r'hx-get="(/drills/[\w-]+/examples/)"')
_STATUS = re.compile(rf'data-status="(\w+)" data-kind="(\w+)" data-submission="({UUID})"')
_STATUS_POLL = re.compile(r'hx-get="/drills/submissions/[0-9a-f-]+/status/"')
_NAME_PARTS = [(re.compile(UUID), "<uuid>"), (re.compile(r"^/drills/(?!card/|submissions/)[\w-]+/"), "/drills/<slug>/")]


# ------------------------------------------------------------------------------------------ records


@dataclass
class Tracked:
    """One submission: who made it, how, and what each read of it said."""

    uuid: str
    learner: Learner
    how: str  # "web submit", "web examples", "API submit", "API examples", "probe"
    made: float
    seen_final: str = ""  # the first final status a learner's poll saw
    reads: list[tuple[str, str]] = field(default_factory=list)  # (status, finished_at) of the final reads
    message: str = ""  # the verdict's message when it is internal_error (ours, never the learner's)
    wait_s: float = 0.0  # from queued to finished, as the API reports them


@dataclass
class Recorder:
    """Everything the learners saw, under one lock: requests by kind, verdict times, submissions, reviews."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    failures: Counter[str] = field(default_factory=Counter)
    verdict_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    submissions: dict[str, Tracked] = field(default_factory=dict)
    reviews: Counter[tuple[str, str]] = field(default_factory=Counter)  # (username, "self"|"output") -> made

    def request(self, name: str, status: int, ms: float) -> None:
        with self.lock:
            self.latency[name].append(ms)
            self.statuses[name][status] += 1

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures[what] += 1

    def track(self, sub: Tracked) -> None:
        with self.lock:
            self.submissions[sub.uuid] = sub

    def verdict(self, how: str, ms: float) -> None:
        with self.lock:
            self.verdict_ms[how].append(ms)

    def reviewed(self, username: str, source: str) -> None:
        with self.lock:
            self.reviews[(username, source)] += 1


def request_name(method: str, path: str) -> str:
    path = path.split("?", 1)[0]
    for pattern, placeholder in _NAME_PARTS:
        path = pattern.sub(placeholder, path)
    return f"{method} {path}"


# ------------------------------------------------------------------------------------------ drills


@dataclass(frozen=True)
class Drill:
    slug: str
    entry_point: str
    device: str
    reference: str  # empty when no file of this slug is found: only wrong code is sent then

    def code(self, right: bool) -> str:
        if right and self.reference:
            return self.reference
        return f"import torch\n\n\ndef {self.entry_point}(*args, **kwargs):\n    return torch.full((3, 3), -7.0)\n"


def drill_references() -> dict[str, str]:
    """Reference solutions by slug, from the drill files the site imported (the API never shows them)."""
    found = {}
    for path in sorted((REPO / "notes" / "drills").rglob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if "slug" in data and "reference" in data:
            found[data["slug"]] = data["reference"]
    return found


# ------------------------------------------------------------------------------------------ learners


class Learner:
    """One simulated learner: a cookie session for the pages, a token for the API, a closed loop of actions."""

    def __init__(self, base: str, number: int, recorder: Recorder, rng: random.Random) -> None:
        self.base, self.recorder, self.rng = base, recorder, rng
        self.username = f"soak{number}-{uuid.uuid4().hex[:6]}"
        self.web = requests.Session()
        self.api = requests.Session()
        self.drills: list[Drill] = []
        self.output_cards: list[tuple[str, str]] = []  # (uuid, printed output as the note shows it)

    # --- HTTP, measured
    def call(self, session: requests.Session, method: str, path: str, **kwargs: Any) -> requests.Response | None:
        name = request_name(method, path)
        started = time.perf_counter()
        try:
            response = session.request(method, self.base + path, timeout=60, allow_redirects=False, **kwargs)
        except requests.RequestException as exc:
            self.recorder.request(name, 0, (time.perf_counter() - started) * 1000)
            self.recorder.fail(f"{name}: {type(exc).__name__}: {str(exc)[:150]}")
            return None
        self.recorder.request(name, response.status_code, (time.perf_counter() - started) * 1000)
        return response

    def post_form(self, path: str, data: dict[str, str], htmx: bool = True) -> requests.Response | None:
        headers = {"X-CSRFToken": self.web.cookies.get("csrftoken", ""), "Referer": self.base + path}
        if htmx:
            headers["HX-Request"] = "true"
        return self.call(self.web, "POST", path, data=data, headers=headers)

    # --- setup
    def sign_up(self, password: str) -> None:
        """The signup page (which signs in), Settings (limits a soak needs), then a token for the API."""
        page = self.call(self.web, "GET", "/accounts/signup/")
        assert page is not None and page.status_code == 200, "the signup page did not answer"
        data = {"username": self.username, "password1": password, "password2": password}
        response = self.post_form("/accounts/signup/", data, htmx=False)
        assert response is not None and response.status_code == 302, f"signup failed for {self.username}"
        self.call(self.web, "GET", "/settings/")
        settings = {"time_zone": "UTC", "day_start_hour": "4", "new_cards_per_day": "1000", "reviews_per_day": "10000"}
        response = self.post_form("/settings/", settings, htmx=False)
        assert response is not None and response.status_code == 302, "settings were not saved"
        credentials = {"username": self.username, "password": password}
        response = self.call(self.api, "POST", "/api/v1/auth/token/", json=credentials)
        assert response is not None and response.status_code == 200, "no API token"
        self.api.headers["Authorization"] = f"Token {response.json()['token']}"

    def load_catalogue(self, references: dict[str, str]) -> None:
        """The drills and output cards, through the API (one page of up to 200 each)."""
        drills = self.call(self.api, "GET", "/api/v1/drills/?page_size=200")
        assert drills is not None and drills.status_code == 200
        self.drills = [
            Drill(d["slug"], d["entry_point"], d["device"], references.get(d["slug"], ""))
            for d in drills.json()["results"]
        ]
        self.load_output_cards()

    def load_output_cards(self) -> None:
        """The output cards in review now: on a fresh start they enter one by one, as the worker verifies
        their snippets (``run.sh``), so a learner who found none looks again later."""
        self.output_cards = [(c["uuid"], printed_output(c.get("back", ""))) for c in self.pages(OUTPUT_CARDS)]

    # --- the loop
    def run(self, deadline: float, think: float) -> None:
        actions: list[tuple[Callable[[], None], int]] = [
            (self.review_web, 4),
            (self.review_api, 2),
            (lambda: self.drill_web("submit"), 2),
            (lambda: self.drill_web("examples"), 1),
            (self.drill_api, 2),
            (self.output_direct, 1),
        ]
        while time.monotonic() < deadline:
            action = self.rng.choices([a for a, _ in actions], weights=[w for _, w in actions])[0]
            try:
                action()
            except Exception as exc:  # a learner must not die silently: count it and go on
                self.recorder.fail(f"learner exception: {type(exc).__name__}: {str(exc)[:120]}")
            time.sleep(think * self.rng.uniform(0.5, 1.5))

    def review_web(self) -> None:
        """The review page's head card: rate it, or answer it as an output or drill card asks."""
        page = self.call(self.web, "GET", "/review/")
        if page is None or page.status_code != 200:
            return
        self.answer_review_page(page.text)

    def answer_review_page(self, text: str) -> None:
        output = _OUTPUT_FORM.search(text)
        if output:
            version = _VERSION.search(text, output.end())
            printed = dict(self.output_cards).get(output.group(2), "")
            result = self.answer_output(output.group(1), version.group(1) if version else "0", printed)
            if result is None or "not-gradable" not in result:
                return
            # A snippet the grader cannot check: the learner compares with the note and rates, as the box says.
        drill = _OPEN_DRILL.search(text)
        if drill:
            target = self.call(self.web, "GET", drill.group(1))
            if target is not None and target.status_code == 302:
                self.drill_page(target.headers["Location"], "submit")
            return
        rate, version = _RATE.search(text), _VERSION.search(text)
        if rate and version:
            data = {"quality": self.rng.choice(["3", "4", "4", "5"]), "version": version.group(1), "duration_ms": "900"}
            response = self.post_form(rate.group(1), data)
            if response is not None and response.status_code == 200:
                self.recorder.reviewed(self.username, "self")

    def review_api(self) -> None:
        head = self.call(self.api, "GET", "/api/v1/review/next/")
        if head is None or head.status_code != 200 or not head.json().get("card"):
            return
        body = head.json()
        if body["card"]["kind"] not in SELF_RATED:  # the page's path rates these (a grader does)
            self.review_web()
            return
        rating = {"card": body["card"]["uuid"], "quality": 4, "version": body["version"], "duration_ms": 800}
        response = self.call(self.api, "POST", "/api/v1/reviews/", json=rating)
        if response is not None and response.status_code == 201:
            self.recorder.reviewed(self.username, "self")

    def drill_web(self, kind: str) -> None:
        self.drill_page(f"/drills/{self.rng.choice(self.drills).slug}/", kind)

    def drill_page(self, path: str, kind: str) -> None:
        """1. the page  2. its examples fragment until computed  3. POST code as htmx does  4. poll the verdict."""
        page = self.call(self.web, "GET", path)
        if page is None or page.status_code != 200:
            return
        self.await_examples(page.text)
        form = _SUBMIT.search(page.text)
        drill = next((d for d in self.drills if form and d.slug == form.group(1)), None)
        if drill is None:
            self.recorder.fail(f"no submit form on {request_name('GET', path)}")
            return
        started = time.monotonic()
        response = self.post_form(f"/drills/{drill.slug}/submit/", {"code": drill.code(self.right()), "kind": kind})
        found = _STATUS.search(response.text) if response is not None and response.status_code == 200 else None
        if found is None:
            if response is not None and response.status_code < 500:
                self.recorder.fail(f"web {kind}: no submission in the answer ({response.status_code})")
            return
        sub = Tracked(found.group(3), self, f"web {kind}", started)
        self.recorder.track(sub)
        self.poll_fragment(sub, found.group(1), bool(_STATUS_POLL.search(response.text)))

    def await_examples(self, text: str) -> None:
        poll = _EXAMPLES_POLL.search(text)
        until = time.monotonic() + 20
        while poll and time.monotonic() < until:
            time.sleep(0.5)
            fragment = self.call(self.web, "GET", poll.group(1), headers={"HX-Request": "true"})
            if fragment is None or fragment.status_code != 200:
                return
            poll = _EXAMPLES_POLL.search(fragment.text)

    def poll_fragment(self, sub: Tracked, status: str, polling: bool) -> None:
        """As the page's htmx does: every 300 ms while the fragment asks to be polled."""
        while polling and time.monotonic() - sub.made < PATIENCE:
            if status in FINAL and not sub.seen_final:
                self.final(sub, status)
            time.sleep(0.3)
            fragment = self.call(
                self.web, "GET", f"/drills/submissions/{sub.uuid}/status/", headers={"HX-Request": "true"}
            )
            found = _STATUS.search(fragment.text) if fragment is not None and fragment.status_code == 200 else None
            if found is None:
                return
            status, polling = found.group(1), bool(_STATUS_POLL.search(fragment.text))
        if status in FINAL and not sub.seen_final:
            self.final(sub, status)

    def drill_api(self) -> None:
        drill = self.rng.choice(self.drills)
        kind = "examples" if self.rng.random() < 0.3 else "submit"
        self.submit_api(drill, kind, self.right(), f"API {kind}", PATIENCE)

    def submit_api(self, drill: Drill, kind: str, right: bool, how: str, patience: float) -> Tracked | None:
        started = time.monotonic()
        body = {"drill": drill.slug, "code": drill.code(right), "kind": kind}
        response = self.call(self.api, "POST", "/api/v1/submissions/", json=body)
        if response is None or response.status_code != 201:
            return None
        sub = Tracked(response.json()["uuid"], self, how, started)
        self.recorder.track(sub)
        status = response.json()["status"]
        while status not in FINAL and time.monotonic() - started < patience:
            time.sleep(0.1 if how == "probe" else 0.5)
            read = self.call(self.api, "GET", f"/api/v1/submissions/{sub.uuid}/")
            if read is None or read.status_code != 200:
                continue
            status = read.json()["status"]
        if status in FINAL:
            self.final(sub, status)
        return sub

    def output_direct(self) -> None:
        """An output card straight from the deck (a new card may always be answered once)."""
        if not self.output_cards:
            self.load_output_cards()
        if not self.output_cards:
            return
        card, printed = self.rng.choice(self.output_cards)
        self.answer_output(f"/outputs/{card}/answer/", "0", printed)

    def answer_output(self, path: str, version: str, printed: str) -> str | None:
        """1. ask for the run as the box does on load  2. post the typed answer  3. re-post while it runs.

        Returns the final fragment (None when there was none within the learner's patience)."""
        self.post_form(path.replace("/answer/", "/prepare/"), {})
        typed = printed if (printed and self.right()) else "tensor([42])"
        data = {"answer": typed, "version": version, "duration_ms": "2000"}
        started = time.monotonic()
        while time.monotonic() - started < PATIENCE:
            response = self.post_form(path, data)
            if response is None or response.status_code != 200:
                return None
            if 'class="pending"' not in response.text:
                break
            time.sleep(1.0)
        else:
            return None
        self.recorder.verdict("output card", (time.monotonic() - started) * 1000)
        if "Rated " in response.text:
            self.recorder.reviewed(self.username, "output")
        return response.text

    def right(self) -> bool:
        return self.rng.random() < RIGHT_SHARE

    def final(self, sub: Tracked, status: str) -> None:
        sub.seen_final = status
        self.recorder.verdict(sub.how, (time.monotonic() - sub.made) * 1000)

    # --- reading back
    def pages(self, path: str) -> Iterator[dict[str, Any]]:
        """Every row of a paged API list."""
        url: str | None = f"{path}{'&' if '?' in path else '?'}page_size=200"
        while url:
            response = self.call(self.api, "GET", url)
            assert response is not None and response.status_code == 200, f"{path}: {response}"
            body = response.json()
            yield from body["results"]
            url = None if not body["next"] else "{0.path}?{0.query}".format(urlsplit(body["next"]))


def printed_output(back: str) -> str:
    """The output an output card's back shows (inside its code fence when it has one)."""
    fenced = re.search(r"```[^\n]*\n(.*?)```", back, re.DOTALL)
    return (fenced.group(1) if fenced else back).strip()


# ------------------------------------------------------------------------------------------ kills


@dataclass
class Kill:
    at: float  # seconds into the run
    pid: int = 0
    back_s: float | None = None  # supervisord reports a new worker RUNNING
    grading_s: float | None = None  # the probe sent at the kill got its final verdict
    left: int = 0  # processes of the killed worker still alive once it grades again


def kill_worker(stack: RunStack, probe: Learner, drill: Drill, started: float, recover: float) -> Kill:
    """SIGKILL the worker's main process (as the OOM killer would); time its return and its grading.

    The probe is submitted once supervisord has seen the death: a message published in the instant
    between the SIGKILL and the broker noticing the closed socket can be popped by the dead worker's
    pending BRPOP and lost until the reaper re-sends its row (GRADER_STALE_AFTER); that case is counted
    among the slow verdicts, not here.
    """
    kill = Kill(at=time.monotonic() - started, pid=int(stack.program("worker")["pid"]))
    tree = [Seen(p.pid, p.create_time(), "") for p in psutil.Process(kill.pid).children(recursive=True)]
    os.kill(kill.pid, 9)
    t0 = time.monotonic()
    while kill.back_s is None and time.monotonic() - t0 < recover:
        if int(stack.program("worker")["pid"]) not in (0, kill.pid):
            kill.back_s = time.monotonic() - t0
        else:
            time.sleep(0.05)
    sub = probe.submit_api(drill, "submit", True, "probe", recover)
    if sub is not None and sub.seen_final:
        kill.grading_s = time.monotonic() - t0
    kill.left = sum(1 for proc in tree if proc.alive())
    return kill


def killer(
    stack: RunStack, probe: Learner, drill: Drill, times: list[float], started: float, recover: float
) -> list[Kill]:
    """The kills at their times, each at least 15 s after the previous one has recovered."""
    kills: list[Kill] = []
    ready = started
    for at in times:
        time.sleep(max(0.0, started + at - time.monotonic(), ready + 15 - time.monotonic()))
        kills.append(kill_worker(stack, probe, drill, started, recover))
        ready = time.monotonic()
    return kills


def kill_times(rng: random.Random, seconds: float, count: int) -> list[float]:
    """One kill at random in each of ``count`` equal slots of the run's middle 70%."""
    slot = 0.7 * seconds / max(count, 1)
    return [0.15 * seconds + i * slot + rng.uniform(0.1, 0.9) * slot for i in range(count)]


# ------------------------------------------------------------------------------------------ reading back


def drain(recorder: Recorder, seconds: float) -> None:
    """Read every submission over the API until it is final (or ``seconds`` pass); store that read."""
    pending = list(recorder.submissions.values())
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        still = []
        for sub in pending:
            read = read_submission(sub)
            if read is not None and read[0] in FINAL:
                sub.reads.append(read)
            else:
                still.append(sub)
        pending = still
        if pending:
            time.sleep(2)


def read_submission(sub: Tracked) -> tuple[str, str] | None:
    response = sub.learner.call(sub.learner.api, "GET", f"/api/v1/submissions/{sub.uuid}/")
    if response is None or response.status_code != 200:
        return None
    body = response.json()
    if body["finished_at"] and body["queued_at"]:
        finished, queued = (datetime.fromisoformat(body[k]) for k in ("finished_at", "queued_at"))
        sub.wait_s = (finished - queued).total_seconds()
    if body["status"] == "internal_error":
        sub.message = str((body.get("verdict") or {}).get("message", ""))[:300]
    return body["status"], body["finished_at"] or ""


def exactly_one_verdict(sub: Tracked) -> bool:
    """Final at the first read after the run, unchanged a redelivery window later, as the learner saw it."""
    if len(sub.reads) != 2 or sub.reads[0] != sub.reads[1] or sub.reads[0][0] not in FINAL:
        return False
    return not sub.seen_final or sub.seen_final == sub.reads[0][0]


@dataclass
class ReadBack:
    rows_made: int = 0
    rows_stored: int = 0
    self_made: int = 0
    self_stored: int = 0
    output_made: int = 0
    output_stored: int = 0


def read_back(learners: list[Learner], recorder: Recorder) -> ReadBack:
    """Each learner's submission rows and reviews as the API lists them, against what the run made."""
    found = ReadBack()
    outputs = {card["uuid"] for card in learners[0].pages(OUTPUT_CARDS)}  # in review by now, not at the start
    for learner in learners:
        made = {s.uuid for s in recorder.submissions.values() if s.learner is learner}
        stored = {row["uuid"] for row in learner.pages("/api/v1/submissions/")}
        found.rows_made += len(made)
        found.rows_stored += len(stored & made) - len(stored - made)  # an extra row counts against
        reviews = list(learner.pages("/api/v1/reviews/"))
        found.self_stored += sum(1 for r in reviews if r["source"] == "self")
        found.output_stored += sum(1 for r in reviews if r["source"] == "output" and r["card"] in outputs)
        found.self_made += recorder.reviews[(learner.username, "self")]
        found.output_made += recorder.reviews[(learner.username, "output")]
    return found


# ------------------------------------------------------------------------------------------ report


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def request_table(recorder: Recorder) -> int:
    """Prints requests by kind; returns the number of 5xx answers."""
    print("| request | count | 5xx | other 4xx | no answer | p50 ms | p95 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    totals = Counter()
    for name in sorted(recorder.latency):
        codes, times = recorder.statuses[name], recorder.latency[name]
        row = Counter(
            count=len(times),
            s5xx=sum(n for c, n in codes.items() if c >= 500),
            s4xx=sum(n for c, n in codes.items() if 400 <= c < 500),
            none=codes[0],
        )
        totals.update(row)
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        print(f"| {name} | {row['count']} | {row['s5xx']} | {row['s4xx']} | {row['none']} | {p50:.0f} | {p95:.0f} |")
    print(f"| all | {totals['count']} | {totals['s5xx']} | {totals['s4xx']} | {totals['none']} | | |")
    return totals["s5xx"] + totals["none"]


def verdict_table(recorder: Recorder) -> None:
    print("\n| from submit to final verdict | count | p50 ms | p95 ms | max s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for how in sorted(recorder.verdict_ms):
        times = recorder.verdict_ms[how]
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        print(f"| {how} | {len(times)} | {p50:.0f} | {p95:.0f} | {max(times) / 1000:.1f} |")


def kill_table(kills: list[Kill]) -> None:
    print("\n| worker kill | at s | pid | respawned after s | grading again after s | its processes left |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for n, kill in enumerate(kills, 1):
        back = "never" if kill.back_s is None else f"{kill.back_s:.1f}"
        grading = "never" if kill.grading_s is None else f"{kill.grading_s:.1f}"
        print(f"| {n} | {kill.at:.0f} | {kill.pid} | {back} | {grading} | {kill.left} |")


def machine() -> str:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; load average at the start {load}"


# ------------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1200.0, help="How long the learners keep going.")
    parser.add_argument("--learners", type=int, default=20)
    parser.add_argument("--kills", type=int, default=3, help="Worker SIGKILLs, at random in the middle 70%%.")
    parser.add_argument("--think", type=float, default=1.5, help="Mean seconds a learner waits between actions.")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--recover", type=float, default=90.0, help="Seconds a killed worker has to grade again.")
    parser.add_argument("--drain", type=float, default=400.0, help="Seconds to wait for the last verdicts.")
    parser.add_argument("--settle", type=float, default=8.0, help="Redelivery window before the second read.")
    parser.add_argument("--database-url", default="", help="DATABASE_URL for the stack (default: SQLite).")
    parser.add_argument("--redis-url", default="", help="REDIS_URL for the stack (default: the embedded broker).")
    return parser.parse_args(argv)


def stack_env(args: argparse.Namespace, prefix: str) -> dict[str, str]:
    """Only limits a simulated learner would hit are raised; everything else is `make run`'s own."""
    env = {
        "GRADER_RATE_LIMIT": "100000",
        "API_RATE_USER": "1000000/hour",
        "API_RATE_ANON": "10000/hour",
    }
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    if args.redis_url:
        env |= {"REDIS_URL": args.redis_url, "CELERY_KEY_PREFIX": prefix, "TEAMS_BOARD_PREFIX": f"{prefix}boards:"}
    return env


def delete_keys(url: str, prefix: str) -> None:
    """Only this run's keys: a Redis given on the command line may be shared, so it is never flushed."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])


def make_learners(args: argparse.Namespace, stack: RunStack, recorder: Recorder) -> tuple[list[Learner], Learner]:
    """The learners and the probe (the kills' own learner), each signed up through the pages."""
    rng = random.Random(args.seed)
    references = drill_references()
    people = []
    for number in range(args.learners + 1):
        learner = Learner(stack.url, number, recorder, random.Random(rng.random()))
        learner.sign_up(f"pw-{uuid.uuid4().hex}")
        learner.load_catalogue(references)
        people.append(learner)
    return people[1:], people[0]


def probe_drill(probe: Learner) -> Drill:
    """A CPU drill with a known reference: the probe's right answer is graded fast and accepted."""
    usable = [d for d in probe.drills if d.device == "cpu" and d.reference]
    return next((d for d in usable if d.slug == "reverse-1d"), usable[0])


def soak(args: argparse.Namespace, stack: RunStack, recorder: Recorder) -> tuple[list[Learner], list[Kill]]:
    """Steps 2 and 3: the learners until the deadline, and the kills meanwhile."""
    learners, probe = make_learners(args, stack, recorder)
    started = time.monotonic()
    deadline = started + args.seconds
    times = kill_times(random.Random(args.seed + 1), args.seconds, args.kills)
    kills: list[Kill] = []
    threads = [threading.Thread(target=learner.run, args=(deadline, args.think)) for learner in learners]
    threads.append(
        threading.Thread(
            target=lambda: kills.extend(killer(stack, probe, probe_drill(probe), times, started, args.recover))
        )
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [probe, *learners], kills


def report(args: argparse.Namespace, recorder: Recorder, back: ReadBack, kills: list[Kill], stop: Any) -> list[str]:
    """Prints the tables; returns what failed."""
    failed = []
    if request_table(recorder):
        failed.append("5xx answers or requests without an answer")
    verdict_table(recorder)
    subs = list(recorder.submissions.values())
    once = sum(1 for sub in subs if exactly_one_verdict(sub))
    statuses = Counter(sub.reads[0][0] if sub.reads else "never final" for sub in subs)
    print("\n| check | made | stored / passed |")
    print("| --- | ---: | ---: |")
    print(f"| submissions with exactly one final verdict | {len(subs)} | {once} |")
    print(f"| submission rows the API lists | {back.rows_made} | {back.rows_stored} |")
    print(f"| reviews rated by the learners | {back.self_made} | {back.self_stored} |")
    print(f"| output-card answers rated by the grader | {back.output_made} | {back.output_stored} |")
    print("\nfinal statuses: " + ", ".join(f"{k} {n}" for k, n in sorted(statuses.items())))
    slow = sorted((sub for sub in subs if sub.wait_s > 30), key=lambda sub: -sub.wait_s)
    slowest = max((sub.wait_s for sub in subs), default=0.0)
    print(f"verdicts more than 30 s after their submission: {len(slow)} (slowest {slowest:.1f} s)")
    for sub in slow[:10]:
        print(f"  slow: {sub.uuid} ({sub.how}) {sub.wait_s:.1f} s from queued to finished")
    for sub in subs:
        if sub.message:
            print(f"internal_error {sub.uuid} ({sub.how}, {sub.learner.username}): {sub.message}")
    if once != len(subs) or back.rows_made != back.rows_stored:
        failed.append("a submission without exactly one final verdict")
    if back.self_made != back.self_stored or back.output_made != back.output_stored:
        failed.append("reviews stored differ from reviews made")
    kill_table(kills)
    if len(kills) != args.kills or any(k.back_s is None or k.grading_s is None or k.left for k in kills):
        failed.append("a killed worker did not come back grading, or left processes")
    seconds, left = stop
    print(f"\nstopped with SIGTERM to run.sh: {seconds:.1f} s, processes left: {len(left)}")
    for proc in left:
        print(f"  left: {proc.pid} {proc.command}")
    if left:
        failed.append("processes left after the stop")
    problems = {k: n for k, n in recorder.failures.items()}
    for what, count in sorted(problems.items()):
        print(f"learner-side problem x{count}: {what}")
    if any("learner exception" in what for what in problems):
        failed.append("a learner raised")
    return failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    prefix = f"quizsite-soak-{os.getpid()}:"
    stack = RunStack(env_overrides=stack_env(args, prefix))
    broker = "REDIS_URL" if args.redis_url else "the embedded broker"
    print(f"## Soak of make run's stack: {args.learners} learners, {args.seconds:.0f} s, {args.kills} worker kills")
    print(f"{machine()}; {'DATABASE_URL' if args.database_url else 'SQLite'}, {broker}; var folder {stack.root}\n")
    recorder = Recorder()
    try:
        started = time.monotonic()
        stack.start()
        print(f"make run's stack healthy after {time.monotonic() - started:.1f} s\n")
        people, kills = soak(args, stack, recorder)
        drain(recorder, args.drain)
        time.sleep(args.settle)
        for sub in recorder.submissions.values():
            read = read_submission(sub)
            sub.reads.append(read or ("unreadable", ""))
        back = read_back(people, recorder)
        stop = stack.stop("term-main")
        failed = report(args, recorder, back, kills, stop)
    finally:
        stack.destroy()
        if args.redis_url:
            delete_keys(args.redis_url, prefix)
    print("\nRESULT: " + ("FAIL: " + "; ".join(failed) if failed else "PASS"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
