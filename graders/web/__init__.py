"""The drill pages (web process): views and forms, the drill hub, verdicts in the learner's language. Each view
calls one action of ``graders.attempts`` (the use cases the API shares) and renders the read model it answers.

Nothing here imports torch or runs code: a submission is stored and sent to a worker (``jobs.tasks``)
after commit; the pages read its row until the worker has recorded the verdict.
"""
