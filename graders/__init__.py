"""Coding drills graded in a sandbox by Celery workers (the ``graders`` Django app), in packages by role.

Each package's docstring names the process that runs it; docs/architecture.md draws them.

- ``web``: the drill pages and hub, the submit use case, the stats section (web process).
- ``rating``: how a verdict becomes the drill card's SM-2 rating, and where a learner stands on each drill
  (the worker rates in the verdict's transaction; the web and the team boards read).
- ``kinds``: the drills' job kinds, a submission and a drill's example outputs (run by the worker).
- ``jobs``: one lifecycle for all sandbox work, the Celery tasks, the worker's hooks and heartbeats, routing
  by device, the status vocabulary (worker and beat; the web sends jobs and reads heartbeats).
- ``drills``: drill files, cases, comparison, grading and its command line (pure; the worker grades).
- ``sandbox``: runs the learners' code (pure; the worker's processes).

At the root only what Django looks for there: models, admin, apps, urls, migrations, management commands,
templates and template tags.
"""
