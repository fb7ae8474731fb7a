"""The Celery app, configured from Django settings (CELERY_* names)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")

app = Celery("quizsite")
app.config_from_object("django.conf:settings", namespace="CELERY")

FOLDER_OPTIONS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")


def ensure_broker_folders(conf: Any) -> None:
    """Create the filesystem broker's folders, which kombu expects to exist.

    kombu's filesystem transport writes a message into ``data_folder_out`` without creating it
    (publishing fails with ChannelError) and creates only the last level of ``control_folder``,
    so a fresh checkout or an emptied ``var/`` could publish nothing until the folders exist.
    """
    if not str(conf.broker_url or "").startswith("filesystem:"):
        return
    options = conf.broker_transport_options or {}
    for name in FOLDER_OPTIONS:
        if options.get(name):
            Path(options[name]).mkdir(parents=True, exist_ok=True)


@app.on_after_configure.connect
def _on_after_configure(sender: Celery, source: Any, **kwargs: Any) -> None:
    ensure_broker_folders(source)


@task_prerun.connect
@task_postrun.connect
def close_old_connections(task: Any = None, **kwargs: Any) -> None:
    """Around each task, what Django does around each request: drop a broken or too old connection.

    A connection that works and is younger than CONN_MAX_AGE is kept (see CELERY_DB_REUSE_MAX).
    Not for eager tasks: they run inside the caller's transaction, which this must not close.
    """
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections as close_old

    close_old()


app.autodiscover_tasks()
