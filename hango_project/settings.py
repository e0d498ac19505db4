"""Django's settings, built from the environment (12-factor).

With no variable set, hango runs on embedded defaults: a SQLite file under ``var/``, no broker
(run work executes in-process) and the offline scripted model. Every variable is parsed once, into
the typed ``HANGO`` object (:mod:`hango_project.config`), which also holds hango's own knobs.
"""

from __future__ import annotations

import dj_database_url

from hango_project.config import from_environment

HANGO = from_environment()

# Where the embedded database and other local state live; git-ignored.
VAR_DIR = HANGO.var_dir

DEBUG = HANGO.debug


def _local_secret_key() -> str:
    """A random key made once and kept in var/, so the embedded setup needs no configuration and
    no key is ever committed. Deployments with several processes set DJANGO_SECRET_KEY."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        import secrets

        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = HANGO.secret_key.get_secret_value() if HANGO.secret_key else _local_secret_key()
ALLOWED_HOSTS = list(HANGO.allowed_hosts)
CSRF_TRUSTED_ORIGINS = list(HANGO.csrf_trusted_origins)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "hango_project.apps.HangoConfig",
    "accounts",
    "integrations",
    "agents",
    "runs",
    "context",
    "inspector",
    "webhooks",
    "schedules",
    "evals",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "hango_project.middleware.BodySizeLimitMiddleware",
    "hango_project.middleware.QueryParametersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Outside the 503 below, which it sees as an answer (rolled back, nothing kept); inside the
    # login session, which a staff caller's key is scoped by.
    "accounts.idempotent_requests.IdempotencyMiddleware",
    "hango_project.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "hango_project.urls"
WSGI_APPLICATION = "hango_project.wsgi.application"
ASGI_APPLICATION = "hango_project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL selects PostgreSQL (postgres://user:pass@host:port/name, via psycopg2); unset,
# an embedded SQLite file under var/.
_EMBEDDED_DB = f"sqlite:///{VAR_DIR / 'hango.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        HANGO.database_url.get_secret_value() if HANGO.database_url else _EMBEDDED_DB,
        conn_max_age=HANGO.database_conn_max_age,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    idle_ms = round(HANGO.database_idle_in_transaction_seconds * 1000)
    # PostgreSQL connections come from a bounded pool per process (hango_project/pgpool): a
    # request or a task gives its connection back at its end (CONN_MAX_AGE 0), a run before
    # each model call; the pool closes a connection older than DATABASE_CONN_MAX_AGE.
    DATABASES["default"]["ENGINE"] = "hango_project.pgpool"
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        options=f"-c idle_in_transaction_session_timeout={idle_ms}",
        pool_size=HANGO.database_pool_size, pool_timeout=HANGO.database_pool_timeout,
        pool_max_age=HANGO.database_conn_max_age)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite: wait for a writer instead of failing at once when the quickstart's threads overlap;
    # a transaction takes the write lock as it begins (IMMEDIATE), or one that read first and then
    # writes while another writes fails at once ("database is locked": a post queueing behind a
    # run while the run commits its turn).
    DATABASES["default"].setdefault("OPTIONS", {}).update(timeout=20, transaction_mode="IMMEDIATE")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Every app's migrations live in the top-level migrations/ package.
MIGRATION_MODULES = {app: f"migrations.{app}" for app in (
    "accounts", "integrations", "agents", "runs", "context", "webhooks", "schedules", "evals")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = HANGO.static_root
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve app static files (the admin's, the API docs') without a collectstatic step.
WHITENOISE_USE_FINDERS = True

# The request body cap (bytes). Django's own limit covers form parsing; BodySizeLimitMiddleware
# applies the same number to JSON bodies, which DRF reads as a stream.
DATA_UPLOAD_MAX_MEMORY_SIZE = HANGO.max_body_bytes

REST_FRAMEWORK = {
    # A key first: its scheme is the one a 401 names (WWW-Authenticate), and a request with a
    # key is the key's even from a browser with a login session.
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication",
                                       "accounts.authentication.StaffSessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.IsTenantMember"],
    "DEFAULT_PARSER_CLASSES": ["hango_api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "hango_api.negotiation.ContentNegotiation",
    "DEFAULT_PAGINATION_CLASS": "hango_api.pagination.CursorPage",
    "EXCEPTION_HANDLER": "hango_project.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Requests per minute per API key, or per member for a staff login session
    # (``HANGO.rate_limit_*``); requests without a caller pass.
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.ApiKeyRateThrottle"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "hango API",
    "DESCRIPTION": "The hango agent server: agents, sessions, runs and the context inspector.",
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1/",
    # Two fields are called "action": the audit log's and a context override's. The
    # snapshot's `counted` and `framing_counted` share one choice set, and a credential's scope
    # and a listing's credential scope another. A message's role keeps its name beside a
    # member's (GET /v1/me).
    "ENUM_NAME_OVERRIDES": {"OverrideActionEnum": "context.models.OverrideAction",
                            "AuditActionEnum": "accounts.models.AuditAction",
                            "CountedEnum": "inspector.serializers.COUNTED",
                            "DiffStatusEnum": "inspector.diff_output.DIFF_STATUSES",
                            "CredentialScopeEnum": "integrations.credentials.SCOPES",
                            "RoleEnum": "runs.models.Role",
                            "MemberRoleEnum": "accounts.models.Role"},
    "GET_LIB_DOC_EXCLUDES": "hango_api.schema.doc_excludes",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "hango_api.schema.add_error_responses",
        "hango_api.schema.constrain_query_parameters",
    ],
}

# Celery. No broker URL → no broker: run work executes in-process (the quickstart).
CELERY_BROKER_URL = HANGO.broker_url or "memory://"
CELERY_TASK_ALWAYS_EAGER = not HANGO.broker_url
# kombu's Redis transport, taking the next task at once when a busy worker's slot frees
# (hango_project/broker.py says why).
if HANGO.broker_url.startswith(("redis://", "rediss://", "unix://")):
    CELERY_BROKER_TRANSPORT = "hango_project.broker:Transport"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CONCURRENCY = HANGO.worker_concurrency
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes every database connection before and after each task unless
# this is set (then it closes them every DB_REUSE_MAX tasks): each run reconnected and prepared
# its statements again, ~5-10 ms of its start. hango_project.celery closes the unusable and
# the old ones (CONN_MAX_AGE) at each task's boundaries instead, as Django does per request.
CELERY_DB_REUSE_MAX = 1_000_000
# Celery asks the app for its result backend at every task's end, and keeps that object per
# thread unless told it is thread-safe: in a gevent worker every task is a new greenlet, so each
# built a backend anew, reading a dozen settings through Django's: a fifth of Celery's own CPU a
# task. Both backends hango uses are safe to share: the disabled one holds no state, Redis's
# takes a connection from its pool per command.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
# Only the broker trigger (hango.send_message) answers its sender; run tasks keep no result.
CELERY_RESULT_BACKEND = HANGO.result_backend_url or None
CELERY_TASK_IGNORE_RESULT = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": HANGO.log_level},
    # Django's own console handler would print every record twice. httpx logs each request's
    # whole URL at INFO: a webhook URL may carry its receiver's token in its query; so does
    # httpx2, the MCP SDK's client, for an MCP server's URL, and the SDK's client names that URL
    # in its DEBUG lines.
    "loggers": {"django": {"handlers": [], "propagate": True},
                "httpx": {"level": "WARNING"}, "httpx2": {"level": "WARNING"},
                "mcp.client": {"level": "INFO"}},
}

# Celery reliability settings: a task is acknowledged only after it ran, is redelivered when
# its worker dies, and a worker takes one task at a time. The Redis visibility timeout must
# exceed the longest task: one run slice plus one turn.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": HANGO.visibility_timeout,
    # Without these, a send to a broker that is unreachable or hung waits forever; a refused
    # connection fails at once either way.
    "socket_connect_timeout": HANGO.broker_timeout,
    "socket_timeout": HANGO.broker_timeout,
}
# One retry (a pooled connection may be stale after the broker restarted), then give up: the
# run is stored, and the reconciler sends it again (runs/execution/tasks.py::send_run).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2,
}
# Autodiscovery looks for an app's top-level tasks module only: the runs app's tasks live in its
# rooms, named here (the task names stay "runs.execute_run" and "hango.send_message").
CELERY_IMPORTS = ["runs.execution.tasks", "runs.intake.triggers"]
CELERY_TASK_ROUTES = {"runs.*": {"queue": "runs"}}
CELERY_TASK_DEFAULT_QUEUE = "runs"
