from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Sessions and runs"

    def ready(self) -> None:
        from accounts.idempotency import purge_expired
        from integrations.credentials import credential_was_set
        from runs.execution import reconciler
        from runs.intake import client_results, resumption

        # A run stopped for want of a credential goes on once it is set.
        credential_was_set.connect(resumption.on_credential_set,
                                   dispatch_uid="runs.intake.resumption")
        # Idempotency keys past HANGO_IDEMPOTENCY_KEY_HOURS go, from every worker's reconciler
        # thread: no process of their own. A key lives up to this beat longer than the setting.
        reconciler.register("idempotency_keys", purge_expired, lambda: PURGE_EVERY_SECONDS)
        # Client tool calls whose caller sent no result in time are answered as failed.
        reconciler.register("client_tools", client_results.expiry_pass,
                            lambda: client_results.EXPIRY_TICK_SECONDS)


PURGE_EVERY_SECONDS = 600
