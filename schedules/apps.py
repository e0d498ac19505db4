from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    name = "schedules"
    verbose_name = "Schedules"

    def ready(self) -> None:
        from hango_project.config import hango
        from runs.execution import reconciler
        from schedules import firing

        reconciler.register("schedules", firing.tick, lambda: hango().schedule_tick_seconds)
