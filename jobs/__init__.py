"""The job system, an app at the base of the others: every app with background work that can be lost builds on
it, and it names none of them. Run by the Celery workers and beat; the web sends jobs and reads heartbeats.

- ``lifecycle``: claim, run, finish, requeue, fail, the rows the reaper re-sends, and the registries (job
  kinds by name; sweeps of lost work that is given up rather than re-sent, such as an FSRS fit);
- ``models``: the abstract ``Job`` every kind's table derives from, and the grading processes' heartbeats;
- ``tasks``: the Celery tasks (``jobs.tasks.run_job`` and ``jobs.tasks.reap``) and sending after commit;
- ``pools``: this process's sandbox pool, as the app that owns the sandbox provides it (``graders.warm_pool``);
- ``heartbeat``: is a grader alive for a queue (the pages and ``/healthz`` ask; ``health`` is ``/healthz``'s part);
- ``notify``: a finished job announced to the request that waits for it;
- ``routing``: which queues a worker consumes; ``status``: the status vocabulary (pure); ``labels``: its
  translated labels.

Kinds live with the apps that define them and register in their ``AppConfig.ready``: ``graders.kinds``
(submissions, example outputs, checks, runs, counterexamples), ``outputs.runs`` (snippet runs), and ``cards``
its FSRS fit's sweep (``cards.optimising.expire_lost``). The worker process's hooks (the warm pool, the
heartbeat, consuming by device) are the graders' (``graders.worker``). This ``__init__`` imports nothing:
the sandbox and the drills read ``status``, which must stay free of Django.
"""
