"""Drills a course's editors write through the site: drafts, checks in the sandbox, publishing.

- ``document`` (pure): a drill file as the editor page's form holds it, and the one TOML writer, so the form
  and "edit as TOML" round-trip exactly;
- ``statement`` (pure): where a drill's statement contradicts its behaviour contract;
- ``checking`` (the grading worker): "Check", the reference on every case for two seeds, each known-wrong
  solution and each alternative, all through ``graders.drills.grading.grade`` on the worker's sandbox pool;
- ``drafts`` (the web process): drafts, the caps per course, asking for a check, publishing a new version.

Nothing here runs a drill's text in the web process: its reference, solutions and case expressions run only
where ``grade`` runs them (the worker's sandbox pool). The ``courses`` app decides who may write a course.
"""
