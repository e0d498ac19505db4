"""Settings, read from the environment (12-factor).

With no variable set, hango runs on embedded defaults: a SQLite file under ``var/``, no broker
(run work executes in-process) and the offline scripted model. hango's own knobs live in the one
namespaced ``HANGO`` dict at the bottom.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


# Where the embedded database and other local state live; git-ignored.
VAR_DIR = Path(os.environ.get("HANGO_VAR_DIR", BASE_DIR / "var"))

DEBUG = env_bool("DJANGO_DEBUG", False)


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


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or _local_secret_key()
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

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
    "agents",
    "runs",
    "context",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "hango_project.middleware.BodySizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
        os.environ.get("DATABASE_URL") or _EMBEDDED_DB,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite: wait for a writer instead of failing at once when the quickstart's threads overlap.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Every app's migrations live in the top-level migrations/ package.
MIGRATION_MODULES = {app: f"migrations.{app}" for app in ("accounts", "agents", "runs", "context")}

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
STATIC_ROOT = Path(os.environ.get("HANGO_STATIC_ROOT", VAR_DIR / "static"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve app static files (the admin's, the API docs') without a collectstatic step.
WHITENOISE_USE_FINDERS = True

# The request body cap (bytes). Django's own limit covers form parsing; BodySizeLimitMiddleware
# applies the same number to JSON bodies, which DRF reads as a stream.
MAX_BODY_BYTES = env_int("HANGO_MAX_BODY_BYTES", 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.IsTenantMember"],
    "DEFAULT_PARSER_CLASSES": ["hango_project.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "hango_project.pagination.CursorPage",
    "EXCEPTION_HANDLER": "hango_project.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Per-API-key requests per minute (HANGO["RATE_LIMIT_*"]); requests without a key pass.
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.ApiKeyRateThrottle"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "hango API",
    "DESCRIPTION": "The hango agent server: agents, sessions, runs and the context inspector.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1/",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "hango_project.schema.add_error_responses",
    ],
}

# Celery. No broker URL → no broker: run work executes in-process (the quickstart).
BROKER_URL = os.environ.get("CELERY_BROKER_URL") or os.environ.get("HANGO_BROKER_URL") or ""
CELERY_BROKER_URL = BROKER_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("HANGO_LOG_LEVEL", "INFO")},
    # Django's own console handler would print every record twice.
    "loggers": {"django": {"handlers": [], "propagate": True}},
}

# hango's own knobs, in one namespace.
HANGO = {
    # Requests per API key a last-used timestamp write is skipped for (seconds between writes).
    "KEY_LAST_USED_RESOLUTION_SECONDS": env_int("HANGO_KEY_LAST_USED_RESOLUTION", 60),
    # List pages: default and hard cap for ?limit=.
    "PAGE_SIZE": env_int("HANGO_PAGE_SIZE", 50),
    "MAX_PAGE_SIZE": env_int("HANGO_MAX_PAGE_SIZE", 200),
    "MAX_BODY_BYTES": MAX_BODY_BYTES,
    # Agent limits checked on write.
    "MAX_SYSTEM_PROMPT_CHARS": env_int("HANGO_MAX_SYSTEM_PROMPT_CHARS", 200_000),
    "DEFAULT_MAX_TURNS": env_int("HANGO_DEFAULT_MAX_TURNS", 50),
    "REPEAT_CALL_THRESHOLD": env_int("HANGO_REPEAT_CALL_THRESHOLD", 3),
    # Memory: the most content a run puts in its prompt, which also caps one file (UTF-8 bytes);
    # files per agent; and the statement timeout of the once-per-run memory and skills loads.
    "MEMORY_MAX_BYTES": env_int("HANGO_MEMORY_MAX_BYTES", 32_768),
    "MEMORY_MAX_FILES": env_int("HANGO_MEMORY_MAX_FILES", 64),
    "CONTEXT_LOAD_TIMEOUT": float(os.environ.get("HANGO_CONTEXT_LOAD_TIMEOUT") or 2),
    "SKILL_MAX_INSTRUCTIONS_CHARS": env_int("HANGO_SKILL_MAX_INSTRUCTIONS_CHARS", 100_000),
    # Tool results longer than this (characters) are saved to a session file and replaced by a
    # pointer and a preview (at least 4000).
    "LARGE_TOOL_RESULT_CHARS": env_int("HANGO_LARGE_TOOL_RESULT_CHARS", 20_000),
    # Subagents: nesting depth (1 = a run's subagents start none) and each one's turn limit.
    "SUBAGENT_MAX_DEPTH": env_int("HANGO_SUBAGENT_MAX_DEPTH", 1),
    "SUBAGENT_MAX_TURNS": env_int("HANGO_SUBAGENT_MAX_TURNS", 20),
    "BROKER_URL": BROKER_URL,
    # Requests per minute per API key unless the key or its tenant says otherwise (0 = no limit),
    # counted in Redis so the limit holds across web processes: by default the broker's Redis;
    # with none, an in-process counter (then the limit is per process).
    "RATE_LIMIT_PER_MINUTE": env_int("HANGO_RATE_LIMIT_PER_MINUTE", 600),
    # Quotas: tokens reserved for each queued or running run when admitting another one, so
    # concurrent starts against a nearly spent quota cannot overspend it.
    "QUOTA_RUN_RESERVATION_TOKENS": env_int("HANGO_QUOTA_RUN_RESERVATION_TOKENS", 1000),
    "RATE_LIMIT_REDIS_URL": os.environ.get("HANGO_RATE_LIMIT_REDIS_URL")
    or (BROKER_URL if BROKER_URL.startswith(("redis://", "rediss://", "unix://")) else ""),
    # Runs. A worker renews its lease on a run every third of the lease while it works, so a
    # dead worker's run is taken over about one lease after it died; a worker gives a run back
    # and re-enqueues it after a slice, keeping every task short.
    "RUN_LEASE_SECONDS": env_int("HANGO_RUN_LEASE_SECONDS", 60),
    "RUN_SLICE_SECONDS": env_int("HANGO_RUN_SLICE_SECONDS", 300),
    "CANCEL_POLL_SECONDS": float(os.environ.get("HANGO_CANCEL_POLL_SECONDS") or 0.25),
    "RECONCILE_SECONDS": env_int("HANGO_RECONCILE_SECONDS", 30),
    "RECONCILE_GRACE_SECONDS": env_int("HANGO_RECONCILE_GRACE_SECONDS", 30),
    # Tests of the API without a worker run the service synchronously on commit.
    "RUN_INLINE": env_bool("HANGO_RUN_INLINE", False),
    "PROVIDER_TIMEOUT_SECONDS": float(os.environ.get("HANGO_PROVIDER_TIMEOUT") or 120),
    "PROVIDER_MAX_RETRIES": env_int("HANGO_PROVIDER_MAX_RETRIES", 3),
    # Slows the offline scripted models down, so a demo (or a test) can watch a run progress.
    "SCRIPTED_DELAY_MS": env_int("HANGO_SCRIPTED_DELAY_MS", 0),
    # The run event stream polls this often and ends after this long (clients reconnect with
    # Last-Event-ID).
    "EVENT_POLL_SECONDS": float(os.environ.get("HANGO_EVENT_POLL_SECONDS") or 0.5),
    "EVENT_STREAM_MAX_SECONDS": env_int("HANGO_EVENT_STREAM_MAX_SECONDS", 300),
}

# Celery reliability settings: a task is acknowledged only after it ran, is redelivered when
# its worker dies, and a worker takes one task at a time. The Redis visibility timeout must
# exceed the longest task: one run slice plus one turn.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("HANGO_VISIBILITY_TIMEOUT", 3600),
}
CELERY_TASK_ROUTES = {"runs.*": {"queue": "runs"}}
CELERY_TASK_DEFAULT_QUEUE = "runs"
CELERY_BEAT_SCHEDULE = {
    "reconcile-runs": {
        "task": "runs.reconcile_runs",
        "schedule": float(HANGO["RECONCILE_SECONDS"]),
    },
}
