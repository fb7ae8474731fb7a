"""Run every output card's code in the sandbox, bring the cards that qualify into review, and list the rest.

Why: an output card is only worth reviewing when its code runs alone, prints the same twice, and its
answer is what torch prints now (the notes were written against older torch versions, often as
excerpts of longer sessions). Each result activates its card with what the sandbox printed, or keeps it
out of review and lists it here for the author (``outputs.verify``). Runs are cached by what runs
(``SnippetRun``): a second check only runs what changed.

``--queue`` runs nothing here: it sends the missing runs to the workers (whose results apply as they
finish), for ``make run``, which checks the notes before its worker starts.
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from jobs import lifecycle as jobs
from jobs import tasks
from jobs.pools import get_pool
from jobs.status import Status
from outputs import runs, verify
from outputs.models import SnippetRun


class Command(BaseCommand):
    help = (
        "Runs the code of every output card in the sandbox (cached by content), puts the cards that run alone, "
        "deterministically and on a CPU into review with what the sandbox printed, and prints one line per "
        "card kept out of review (error) or whose note shows another output (warning)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the findings as a JSON list.")
        parser.add_argument("--rerun", action="store_true", help="Run every snippet again, ignoring cached runs.")
        parser.add_argument(
            "--queue", action="store_true", help="Send the missing runs to the workers instead of running them here."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report, then roll back the runs and cards it changed."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            pending = self._pending(rerun=options["rerun"], queue=options["queue"])
            if pending and options["queue"]:
                for run in SnippetRun.objects.filter(pk__in=pending):
                    tasks.enqueue_on_commit(run)
            elif pending:
                self._run(pending, options["verbosity"])
            counts = verify.sync(card for card, _ in runs.output_cards())
            report = runs.check_report()
            if options["dry_run"]:
                transaction.set_rollback(True)
        if options["json"]:
            self.stdout.write(json.dumps(report["findings"], ensure_ascii=False, indent=2))
            return
        if options["verbosity"] < 1:
            return
        for row in report["findings"]:
            where = f"{row['note']} › {row['heading']}" if row["heading"] else row["note"]
            self.stdout.write(f"{row['severity']}: {where} [card {row['card']}]: {row['problem']}: {row['detail']}")
        sent = f", {len(pending)} sent to the workers" if options["queue"] and pending else ""
        self.stderr.write(f"{report['checked']} snippets checked{sent}; {verify.summary(counts)}.")

    def _pending(self, *, rerun: bool, queue: bool) -> list[int]:
        """Ids of runs to do: missing or unfinished (with ``--queue``: missing or still queued)."""
        ids = []
        for card, snippet in runs.output_cards():
            run, created = SnippetRun.objects.get_or_create(card=card, content_hash=snippet.content_hash)
            if queue:
                if created or run.status == Status.QUEUED:
                    ids.append(run.pk)
                continue
            if rerun or not run.is_final:
                jobs.rerun(runs.SNIPPETS, run.pk)
                ids.append(run.pk)
        return ids

    def _run(self, ids: list[int], verbosity: int) -> None:
        """In this process's CPU sandbox pool (GRADER_POOL_SIZE children), closed when the process exits."""
        pool = get_pool("cpu")
        pool.warm()
        for number, run_id in enumerate(ids, start=1):
            status = jobs.process(runs.SNIPPETS, run_id, pool, worker="check_notes").status
            if verbosity >= 2:
                self.stderr.write(f"[{number}/{len(ids)}] run {run_id}: {status}")
