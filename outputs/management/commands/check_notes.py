"""Run every output card's snippet and list the notes whose shown output is not what torch prints.

Why: the notes were written against older torch versions, often as excerpts of longer sessions. A
learner graded against a wrong "shown output" is taught the wrong thing, so authors need the list.
Runs are cached by snippet content (``SnippetRun``): a second check only runs what changed.
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from graders import jobs
from graders.status import Status
from outputs import runs
from outputs.models import SnippetRun


class Command(BaseCommand):
    help = (
        "Runs the snippet of every output card in the sandbox (cached by content) and prints one line per "
        "snippet whose note shows an output that differs from the real one or that fails to run."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the findings as a JSON list.")
        parser.add_argument(
            "--all", action="store_true", help="Also list snippets that cannot be checked (random, need context)."
        )
        parser.add_argument("--rerun", action="store_true", help="Run every snippet again, ignoring cached runs.")
        parser.add_argument("--dry-run", action="store_true", help="Report, then roll back the runs it stored.")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            pending = self._pending(rerun=options["rerun"])
            if pending:
                self._run(pending, options["verbosity"])
            report = runs.check_report(include_info=options["all"])
            if options["dry_run"]:
                transaction.set_rollback(True)
        if options["json"]:
            self.stdout.write(json.dumps(report["findings"], ensure_ascii=False, indent=2))
            return
        for row in report["findings"]:
            where = f"{row['note']} › {row['heading']}" if row["heading"] else row["note"]
            self.stdout.write(f"{row['severity']}: {where} [card {row['card']}]: {row['problem']}: {row['detail']}")
        if options["verbosity"] >= 1:
            errors = sum(1 for row in report["findings"] if row["severity"] == "error")
            self.stderr.write(f"{report['checked']} snippets checked, {errors} findings for authors.")

    def _pending(self, *, rerun: bool) -> list[int]:
        """Ids of runs to do: missing, unfinished, or needing the note-context pass the grader skips."""
        ids = []
        for card, snippet in runs.output_cards():
            run, created = SnippetRun.objects.get_or_create(card=card, content_hash=snippet.content_hash)
            if rerun or not run.is_final:
                SnippetRun.objects.filter(pk=run.pk).update(
                    status=Status.QUEUED, claim_token="", claimed_at=None, finished_at=None, attempts=0
                )
                ids.append(run.pk)
        return ids

    def _run(self, ids: list[int], verbosity: int) -> None:
        """In this process's default sandbox pool (SANDBOX_POOL_SIZE children), closed when the process exits."""
        from graders.sandbox import default_pool

        pool = default_pool("cpu")
        pool.warm()
        for number, run_id in enumerate(ids, start=1):
            status = jobs.process(runs.SNIPPETS, run_id, pool, worker="check_notes").status
            if verbosity >= 2:
                self.stderr.write(f"[{number}/{len(ids)}] run {run_id}: {status}")
