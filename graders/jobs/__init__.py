"""One job system for all sandbox work: run by the Celery worker and beat; the web sends jobs and reads heartbeats.

- ``lifecycle``: claim, run, finish, requeue, fail, and the rows the reaper re-sends;
- ``tables``: the abstract ``Job`` every kind's table derives from, and the graders' heartbeats;
- ``tasks``: the Celery tasks (named ``graders.tasks.run_job`` and ``graders.tasks.reap``) and sending after commit;
- ``worker``: the worker process's hooks (a warm pool, a heartbeat, consuming by device);
- ``warm_pool``: this process's sandbox pool, the one way a job gets one (``GRADER_POOL_SIZE``);
- ``heartbeat``: is a grader alive for a queue (the pages and ``/healthz`` ask);
- ``routing``: which queues a worker consumes; ``status``: the status vocabulary (pure).

Job kinds live with the apps that define them (``graders.kinds``, ``outputs.runs``) and register by name;
this package imports none of them, so an app with a kind of its own builds on this package alone. This
``__init__`` imports nothing: the sandbox and the drills read ``status``, which must stay free of Django.
"""
