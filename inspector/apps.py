from django.apps import AppConfig


class InspectorConfig(AppConfig):
    name = "inspector"
    verbose_name = "Context inspector's routes and panel"
