from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from hango_project.views import healthz, not_found

# The schema in JSON, as every other answer of the API, unless YAML is asked for (`?format=yaml`
# or `Accept: application/yaml`): drf-spectacular's default is YAML, which `curl | jq` and a
# client's JSON decoder choke on. The plain media types first: the ones a client expects.
SCHEMA_RENDERERS = [OpenApiJsonRenderer2, OpenApiJsonRenderer, OpenApiYamlRenderer2,
                    OpenApiYamlRenderer]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Public, and read with no credentials at all: whatever a browser sends along (a login
    # session of a user who is not staff, say) cannot refuse them.
    path("v1/schema", SpectacularAPIView.as_view(authentication_classes=[],
                                                 renderer_classes=SCHEMA_RENDERERS),
         name="schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[]),
         name="docs"),
    path("v1/", include("agents.urls")),
    path("v1/", include("runs.urls")),
    path("v1/", include("accounts.urls")),
    path("v1/", include("integrations.urls")),
    path("v1/", include("inspector.urls")),
    path("v1/", include("webhooks.urls")),
    path("v1/", include("schedules.urls")),
    path("v1/", include("evals.urls")),
    # Last under /v1/: an unknown API route answers the error shape even with DJANGO_DEBUG=1,
    # where Django would answer its HTML debug page instead of handler404.
    re_path(r"^v1/", not_found, name="v1-unknown"),
    path("admin/", admin.site.urls),
]

handler404 = "hango_project.views.not_found"
handler500 = "hango_project.views.server_error"
