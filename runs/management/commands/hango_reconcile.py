from django.core.management.base import BaseCommand

from runs.tasks import reconcile_runs


class Command(BaseCommand):
    help = (
        "Re-enqueue active runs that no worker is advancing (expired lease, or a queued run "
        "whose task never arrived). Celery beat runs this every HANGO_RECONCILE_SECONDS; use "
        "this command without a broker or to nudge a deployment by hand."
    )

    def handle(self, *args, **options):
        count = reconcile_runs()
        self.stdout.write(f"re-enqueued {count} run(s)")
