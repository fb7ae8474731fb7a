"""Container healthchecks, run by Docker inside the containers (standard library only).

``python docker/healthcheck.py web``: GET /healthz?only=database,redis on loopback. The Host header
is the first of ALLOWED_HOSTS (Django refuses any other), and X-Forwarded-Proto says https so a
site that trusts the proxy header does not redirect; /healthz is exempt from the HTTPS redirect
anyway. Celery is left out on purpose: reviews keep working while the workers restart, so the web
must stay in rotation. Exit 0 when healthy, 1 otherwise (Docker's contract).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

TIMEOUT_S = 4.0


def host_header() -> str:
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    first = hosts[0].lstrip(".") if hosts else "localhost"
    return "localhost" if first in ("", "*") else first


def check_web(port: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/healthz?only=database,redis",
        headers={"Host": host_header(), "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        sys.stderr.write(f"healthz failed: {exc}\n")
        return 1


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "web":
        sys.stderr.write("usage: healthcheck.py web\n")
        return 2
    return check_web(os.environ.get("PORT", "8000"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
