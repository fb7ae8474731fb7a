# syntax=docker/dockerfile:1
# The web image: gunicorn + Django, also used for celery beat and the one-shot migrate service.
# No torch: only requirements-web.txt is installed (the web process never imports torch).
# Build: docker build -f docker/web.Dockerfile -t quizsite-web .

# 1. Browser assets (htmx, KaTeX, the CodeMirror editor bundle) from the npm registry.
FROM node:22-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY frontend/ ./
RUN npm run --silent build

# 2. The Python application.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    QUIZSITE_VAR_DIR=/app/var \
    PORT=8000
RUN groupadd --system --gid 10001 quizsite \
    && useradd --system --uid 10001 --gid quizsite --home-dir /app --no-create-home --shell /usr/sbin/nologin quizsite
WORKDIR /app
COPY requirements-web.txt ./
RUN pip install -r requirements-web.txt
# The code stays owned by root: the app user can read it but not change it.
COPY . .
COPY --from=frontend /src/static/dist static/dist
# collectstatic needs settings, and settings need a SECRET_KEY when DEBUG is off: a throwaway
# value for this one command, never stored in the image (the real one comes from the environment).
RUN DEBUG=0 SECRET_KEY=collectstatic-only-throwaway-value ALLOWED_HOSTS=localhost SITE_URL=http://localhost \
    python manage.py collectstatic --noinput -v 0 \
    && python -m compileall -q api cards courses fastpath graders jobs outputs quizsite teams
USER quizsite:quizsite
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["python", "docker/healthcheck.py", "web"]
# Workers: WEB_CONCURRENCY (gunicorn reads it), each with 4 threads, keep-alive 75 s, as make run runs it
# (bench/load.py: sync workers topped out at ~54 req/s on 2 cores, gthread 2x4 gave 72.6); more options
# through GUNICORN_CMD_ARGS.
# X-Forwarded-Proto is trusted by Django only with SECURE_PROXY_SSL_HEADER=1 (gunicorn's own
# --forwarded-allow-ips stays at its loopback default).
CMD ["gunicorn", "quizsite.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--threads", "4", "--keep-alive", "75", "--worker-tmp-dir", "/dev/shm", "--access-logfile", "-"]
