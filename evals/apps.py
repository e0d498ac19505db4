from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evals"

    def ready(self) -> None:
        from evals import tasks
        from runs import signals

        # An eval's case moves on (its next turn, or its grading) when its run ends.
        signals.run_may_have_ended.connect(tasks.on_run_end, dispatch_uid="evals.on_run_end")
