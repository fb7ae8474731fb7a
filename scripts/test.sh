#!/usr/bin/env bash
# The whole suite: on PostgreSQL when it answers (else SQLite), then the data-layer tests again on SQLite.
set -eu
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
fi
if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}"
fi
echo "== full suite on ${DATABASE_URL:-SQLite}"
pytest -n 2 --dist loadgroup --durations=25 "$@"
if [ -n "${DATABASE_URL:-}" ]; then
  echo "== data layer again on SQLite"
  env -u DATABASE_URL pytest -n 2 -m "not browser and not sandbox and not integration and not slow" "$@"
fi
