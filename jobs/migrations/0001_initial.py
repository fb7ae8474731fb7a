"""The heartbeats' model moves here from ``graders`` (issue 40): state only. Its table, index and rows stay
as they are (``graders_graderheartbeat``), so a database migrated before the move loses nothing; a new one
gets the table from ``graders``' own migrations, which run first."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("graders", "0016_learnerskill_fitted_from_first_attempts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GraderHeartbeat",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(help_text="host:pid of the grading process.", max_length=200, unique=True)),
                        ("queues", models.JSONField(default=list, help_text="The Celery queues it consumes.")),
                        ("device", models.CharField(help_text="The device its sandbox pool was asked for.", max_length=16)),
                        ("health", models.JSONField(default=dict, help_text="Its sandbox pool's own report (state, device, error).")),
                        ("started_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("seen_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "db_table": "graders_graderheartbeat",
                        "indexes": [models.Index(fields=["-seen_at"], name="graderheartbeat_seen_idx")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
