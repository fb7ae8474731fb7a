"""The drills' job kinds (worker process): what a job of each kind runs and what finishing it records.

``verdicts``: a submission is graded against the stored drill, its verdict recorded and, for an accepted
attempt, the drill card rated in the same transaction. ``examples``: a drill's example outputs, asked for by
the web and the import command (a row sent after commit), computed by a worker from the reference.
``checks``: "Check" of a course's drill draft (the reference, the known-wrong solutions, the alternatives),
its report written onto the draft. ``runs``: "Run on your own input", the learner's code and the reference on
arguments the learner typed, both outputs and their diff stored on the row (never graded, never rated).
The lifecycle around them all is ``jobs``'; each kind registers itself by name (``GradersConfig.ready``).
"""
