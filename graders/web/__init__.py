"""The drill pages (web process): views and forms, the drill hub, the submit use case, the stats section.

Nothing here imports torch or runs code: a submission is stored and sent to a worker (``jobs.tasks``)
after commit; the pages read its row until the worker has recorded the verdict.
"""
