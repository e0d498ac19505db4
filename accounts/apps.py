from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Tenancy and access"
    default_auto_field = "django.db.models.BigAutoField"
