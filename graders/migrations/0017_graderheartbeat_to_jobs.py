"""``GraderHeartbeat`` belongs to the ``jobs`` app now (``jobs/migrations/0001_initial.py`` takes it over):
state only, the table ``graders_graderheartbeat`` and its rows stay. Its content type follows it, so what
names it (permissions) keeps working."""

from django.db import migrations


def move_content_type(apps, schema_editor, source="graders", target="jobs"):
    types = apps.get_model("contenttypes", "ContentType").objects.using(schema_editor.connection.alias)
    if not types.filter(app_label=target, model="graderheartbeat").exists():  # else the stale one stays
        types.filter(app_label=source, model="graderheartbeat").update(app_label=target)


def move_back(apps, schema_editor):
    move_content_type(apps, schema_editor, source="jobs", target="graders")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("graders", "0016_learnerskill_fitted_from_first_attempts"),
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="GraderHeartbeat")],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_back),
    ]
