#!/usr/bin/env bash
# Start quizsite on one machine with nothing but Python: migrate, import the notes and drills,
# make sure the demo account exists, then run a Celery worker in the background and the Django
# server in the foreground. SQLite and the filesystem broker are the defaults (no Redis, no PostgreSQL).
# Usage: scripts/run.sh HOST PORT   (called by `make run` with the venv ready and the frontend built)
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${1:-127.0.0.1}"
PORT="${2:-8000}"
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
export DEBUG="${DEBUG:-1}"
manage() { "$PY" manage.py "$@"; }
has_command() { manage help "$1" >/dev/null 2>&1; }

# The SQLite file and the filesystem broker's folders live here (settings.VAR_DIR).
VAR_DIR="${QUIZSITE_VAR_DIR:-var}"
mkdir -p "$VAR_DIR/broker/queue" "$VAR_DIR/broker/processed"
manage migrate --noinput
if has_command import_notes; then manage import_notes notes/; fi
if has_command import_drills; then manage import_drills; fi
manage ensure_demo_user
# Only needed when DEBUG is off (runserver serves static files itself in DEBUG).
if [ "$DEBUG" != "1" ] && [ "$DEBUG" != "true" ]; then manage collectstatic --noinput -v 0; fi

worker_pid=""
cleanup() {
  if [ -n "$worker_pid" ] && kill -0 "$worker_pid" 2>/dev/null; then
    kill "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT INT TERM
CELERY="$(dirname "$PY")/celery"
[ -x "$CELERY" ] || CELERY=celery
# One worker for both grading queues (a GPU drill grades on the CPU here and its verdict says so)
# and the housekeeping queue; -B runs the periodic jobs (teams seasons, digests, the grading reaper).
"$CELERY" -A quizsite worker -Q grade_cpu,grade_gpu,celery --pool prefork --concurrency 2 -l info \
  -B -s "$VAR_DIR/celerybeat-schedule" &
worker_pid=$!
echo "Celery worker started (pid $worker_pid); serving on http://$HOST:$PORT/"
manage runserver "$HOST:$PORT"
