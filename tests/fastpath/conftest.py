"""The drill fixtures of tests/graders, for the statements that read drills."""

from tests.graders.conftest import drill, learner, make_drill, note  # noqa: F401 (fixtures)
