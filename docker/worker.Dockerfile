# syntax=docker/dockerfile:1
# The CPU grading worker: Celery + the sandbox + a CPU-only torch build (no CUDA libraries, ~1 GB less).
# Build: docker build -f docker/worker.Dockerfile -t quizsite-worker .
# The sandbox needs unprivileged user namespaces and a seccomp profile that allows them
# (docker/seccomp-worker.json; see docs/deploy.md, "The sandbox in containers").
FROM python:3.11-slim-bookworm
# The torch version comes from requirements.txt (torch==...); only the wheel's flavour is chosen here.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    QUIZSITE_VAR_DIR=/tmp/quizsite \
    GRADER_DEVICE=cpu
# libseccomp2: pyseccomp loads it to install the runners' syscall filter.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libseccomp2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 quizsite \
    && useradd --system --uid 10001 --gid quizsite --home-dir /app --no-create-home --shell /usr/sbin/nologin quizsite
WORKDIR /app
COPY requirements-web.txt requirements.txt ./
# 1. torch from the CPU wheel index at the pinned version (2.13.0+cpu satisfies torch==2.13.0);
# 2. everything else from PyPI, pinned; pip sees torch already installed and keeps it.
RUN pip install --index-url "$TORCH_INDEX_URL" "$(grep -E '^torch==' requirements.txt)" \
    && pip install -r requirements.txt \
    && python -c "import torch; assert not torch.version.cuda, torch.version.cuda"
COPY . .
RUN python -m compileall -q api cards courses fastpath graders jobs outputs quizsite teams
# An unprivileged user: RLIMIT_NPROC then applies to the sandbox runners too (it does not for root).
USER quizsite:quizsite
CMD ["celery", "-A", "quizsite", "worker", "-Q", "grade_cpu,celery,counterexample", "--concurrency", "2", "-l", "info"]
