"""OpenAPI description of the API's credentials (loaded by AccountsConfig.ready)."""

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `manage.py hango_bootstrap` or `hango_create_key`.",
        }


class StaffSessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.StaffSessionAuthentication"
    name = "StaffSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "A staff user's Django admin login session (the admin's own screens). "
                           "Unsafe methods need the csrftoken cookie's value in `X-CSRFToken`; "
                           "`X-Hango-Tenant: <tenant id>` names the tenant to act in (optional "
                           "for a member of one tenant).",
        }
