from django.apps import AppConfig


class HangoConfig(AppConfig):
    """Project-wide start-up: telemetry, and the check that the database can be reached."""

    name = "hango_project"
    verbose_name = "hango"

    def ready(self) -> None:
        from hango_project import dbready, telemetry  # noqa: F401 (dbready registers its check)

        telemetry.configure()
