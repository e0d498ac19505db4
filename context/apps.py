from django.apps import AppConfig


class ContextConfig(AppConfig):
    name = "context"
    verbose_name = "Context inspector"

    def ready(self) -> None:
        from context import telemetry

        telemetry.register()
