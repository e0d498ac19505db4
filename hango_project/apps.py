from django.apps import AppConfig


class HangoConfig(AppConfig):
    """Project-wide start-up: telemetry."""

    name = "hango_project"
    verbose_name = "hango"

    def ready(self) -> None:
        from hango_project import telemetry

        telemetry.configure()
