# syntax=docker/dockerfile:1
# The GPU grading worker: as docker/worker.Dockerfile, with a CUDA build of torch.
# Build: docker build -f docker/worker-gpu.Dockerfile -t quizsite-worker-gpu .
# The CUDA runtime libraries come with the wheel (torch pins its nvidia-* packages exactly); the
# driver comes from the host through the NVIDIA Container Toolkit, so the base image needs no CUDA.
FROM python:3.11-slim-bookworm
# PyPI's Linux x86_64 torch wheel is the CUDA 12 build; point this at a download.pytorch.org
# index (for example .../whl/cu128) to choose another CUDA version.
ARG TORCH_INDEX_URL=https://pypi.org/simple
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    QUIZSITE_VAR_DIR=/tmp/quizsite \
    GRADER_DEVICE=cuda \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN apt-get update \
    && apt-get install -y --no-install-recommends libseccomp2 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 quizsite \
    && useradd --system --uid 10001 --gid quizsite --home-dir /app --no-create-home --shell /usr/sbin/nologin quizsite
WORKDIR /app
COPY requirements-web.txt requirements.txt ./
RUN pip install --index-url "$TORCH_INDEX_URL" "$(grep -E '^torch==' requirements.txt)" \
    && pip install -r requirements.txt \
    && python -c "import torch; assert torch.version.cuda, 'torch was built without CUDA'"
COPY . .
RUN python -m compileall -q api cards courses fastpath graders jobs outputs quizsite teams
USER quizsite:quizsite
# One process per GPU: CUDA contexts are large, and the sandbox caps each runner's share of memory.
CMD ["celery", "-A", "quizsite", "worker", "-Q", "grade_gpu", "--concurrency", "1", "-l", "info"]
