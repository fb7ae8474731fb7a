"""A learner's record on drills: the drill card's SM-2 rating (``reviews``, ``quality``) and where the learner
stands on each drill (``progress``), and the learner's pass rates per note (``stats``: the stats page, the API).

Run by both processes: the worker rates an accepted attempt in the verdict's transaction
(``graders.kinds.verdicts``); the web opens a drill's review, rates giving up and moving on, and reads the
review for the page; the drill hub and the team boards (``teams.activity``) read ``progress``.
"""
