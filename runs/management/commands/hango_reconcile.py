import time

from django.core.management.base import BaseCommand

from runs.execution import queued_tasks
from runs.execution.tasks import reconcile
from runs.execution.timings import current
from webhooks.tasks import send_due


class Command(BaseCommand):
    help = (
        "Re-enqueue active runs that no worker is advancing (expired lease, or a queued run "
        "whose task never arrived). Every Celery worker runs this pass every "
        "HANGO_RECONCILE_SECONDS; use this command without a broker or to nudge a deployment "
        "by hand. Webhook deliveries that are due are handed on too. A queued run whose task "
        "the broker neither queues nor has reserved is sent again only if a second pass, a "
        "reservation beat later, misses it too."
    )

    def handle(self, *args, **options):
        count = reconcile()
        if queued_tasks.missed():  # maybe between the list and its reservation: look again
            time.sleep(current().reservation_beat)
            count += reconcile()
        resent = send_due()
        if count or options["verbosity"] > 0:
            self.stdout.write(f"re-enqueued {count} run(s)")
        if resent or options["verbosity"] > 0:
            self.stdout.write(f"handed on {resent} webhook deliveries")
