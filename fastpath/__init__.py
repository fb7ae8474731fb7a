"""The one place where this project goes under the ORM or keeps what it read in a process.

Every raw SQL statement, every compiled statement (``prepared.Prepared``) and every process-wide cache of
what the database holds lives in this package, one module per thing it reads, named for it:

- ``prepared``: the engine (a queryset compiled once per database; the job claim's writes);
- ``database``: whether the database answers (the health check's one statement);
- ``deck``: the deck stamp, and the deck each process keeps while the stamp holds;
- ``review_day``: a learner's day (states, today's reviews, stage order) in one statement;
- ``card_states``, ``drill_reviews``, ``profiles``, ``submission_window``: the submission path's reads;
- ``grading_drills``: the drill a worker grades with, kept per process while its version holds.

Each module names the A/B that keeps it (docs/performance.md) and has its test; a trick whose A/B no
longer shows a gain goes back to the ORM. ``tests/test_fastpath.py`` fails on a cursor, ``.raw()``, SQL
compiler access, a compiled statement or a module-level cache anywhere else in the app code.
"""
