"""A learner's attempt at a drill, the one use-case layer that the drill pages (``graders.web``) and the API
(``api``) both call: each action is one function of ``graders.attempts.actions`` and answers a frozen read
model, which the caller renders (a template, a serializer).

- ``actions``: page, status, submit, open a hint, view the reference, give up, move on;
- ``submissions``: the one way a submission is made (size, rate limit, the review's seed, the row, the queue);
- ``runs``: "Run on your own input", the one way a run is asked for.

Nothing here renders HTML or knows a request: the web and the API each turn the read model into their answer.
"""
