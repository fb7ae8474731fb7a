"""Issue 41 item 3: accepted attempts carry the key of their normalised code (so a drill's solution groups are one
indexed query), existing ones backfilled; a drill may open its solutions to every learner."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

BATCH = 500


def backfill_solution_keys(apps: Any, schema_editor: Any) -> None:
    """Key every accepted attempt recorded before keys existed, in batches (the key is a pure function of the
    code, so later runs of this function give the same keys)."""
    from graders.drills.solution_key import solution_key

    Submission = apps.get_model("graders", "Submission")
    rows = Submission.objects.filter(status="accepted", kind="submit", solution_key="").only("pk", "code")
    batch = []
    for row in rows.iterator(chunk_size=BATCH):
        row.solution_key = solution_key(row.code)
        batch.append(row)
        if len(batch) >= BATCH:
            Submission.objects.bulk_update(batch, ["solution_key"])
            batch = []
    if batch:
        Submission.objects.bulk_update(batch, ["solution_key"])


class Migration(migrations.Migration):
    dependencies = [
        ("graders", "0013_drilldifficulty_fitted_from_first_attempts"),
    ]

    operations = [
        migrations.AddField(
            model_name="drill",
            name="solutions_public",
            field=models.BooleanField(
                default=False,
                help_text="Learners who solved it see every learner's accepted solutions, not only their teams' "
                "(set by staff or the owner of the drill's team).",
            ),
        ),
        migrations.AddField(
            model_name="submission",
            name="solution_key",
            field=models.CharField(
                blank=True,
                help_text="An accepted attempt's normalised code's key (graders.drills.solution_key): equal keys, "
                "one group.",
                max_length=66,
            ),
        ),
        migrations.AddIndex(
            model_name="submission",
            index=models.Index(
                condition=models.Q(("kind", "submit"), ("status", "accepted")),
                fields=["drill", "user", "solution_key", "id"],
                name="submission_solution_idx",
            ),
        ),
        migrations.RunPython(backfill_solution_keys, migrations.RunPython.noop),
    ]
