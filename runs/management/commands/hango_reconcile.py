from django.core.management.base import BaseCommand

from runs.tasks import reconcile


class Command(BaseCommand):
    help = (
        "Re-enqueue active runs that no worker is advancing (expired lease, or a queued run "
        "whose task never arrived). Every Celery worker runs this pass every "
        "HANGO_RECONCILE_SECONDS; use this command without a broker or to nudge a deployment "
        "by hand."
    )

    def handle(self, *args, **options):
        count = reconcile()
        if count or options["verbosity"] > 0:
            self.stdout.write(f"re-enqueued {count} run(s)")
