"""Drill difficulty learned from solve data (issue 41 item 5).

- ``rasch``: the model, pure (numpy, no Django): a Rasch fit of first attempts, bands and disagreement;
- ``refit``: what the scoring worker runs (``task``: beat's ``graders-refit-difficulty``): first attempts from
  ``Submission`` rows, the fit, one ``DrillDifficulty`` row per drill; the hub reads those rows.
"""
