from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Sessions and runs"

    def ready(self) -> None:
        from integrations.credentials import credential_was_set
        from runs import resumption

        # A run stopped for want of a credential goes on once it is set.
        credential_was_set.connect(resumption.on_credential_set,
                                   dispatch_uid="runs.resumption")
