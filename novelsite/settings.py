"""Novelsite settings: one env-driven module with laptop defaults.

Every value a deployment changes comes from the environment (see README, "Configuration").
Without any environment the server runs embedded: a SQLite file, Celery tasks run eagerly,
and the deterministic offline LLM backend.
"""
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from novelsite.nightly_schedule import nightly_crontab

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():  # optional local overrides; the real environment wins
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)
if not DEBUG and not env.str("SECRET_KEY", default=""):
    # A production server never runs on the laptop key: anyone who knows it can forge sessions.
    raise ImproperlyConfigured("SECRET_KEY must be set in the environment when DEBUG is false "
                               "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))').")
SECRET_KEY = env.str("SECRET_KEY", default="insecure-dev-key-change-me-" + "x" * 24)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's static files, served from here (no CDN)
    "django_jsonform",
    "simple_history",
    "projects",
    "pipeline",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files from the app itself, also with DEBUG off
    "novelsite.edge_guards.NulRefusedMiddleware",  # NUL in the path or query: 400 before any lookup
    # Eager Celery: the pipeline work a request queues starts once everything below has answered.
    "pipeline.runtime.background.RunsInBackgroundMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Refuses a body over its view's limit from Content-Length, before the CSRF check reads it.
    "projects.body_limits.RequestBodyLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "novelsite.edge_guards.NovelsiteErrorMiddleware",  # an application error in a web view: 4xx page, not 500
]

ROOT_URLCONF = "novelsite.urls"
WSGI_APPLICATION = "novelsite.wsgi.application"
ASGI_APPLICATION = "novelsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",  # {{ csp_nonce }} for an inline <script>
                "novelsite.llm_notice.offline_backend_notice",  # the "placeholder text" banner
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# Default: a SQLite file under the project root. IMMEDIATE transactions take SQLite's write lock
# at BEGIN, so two writers queue instead of failing with "database is locked" halfway through.
DATABASES = {
    "default": env.db_url(
        "DATABASE_URL", default=f"sqlite:///{(BASE_DIR / 'db.sqlite3').as_posix()}"
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20}
    )
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    # Server-side parameter binding lets psycopg prepare a statement the connection has run a few
    # times, so PostgreSQL stops parsing and planning the same claim and completion queries of
    # every stage hop. Off behind a transaction-pooling PgBouncer (prepared statements do not
    # survive a change of server connection there).
    postgres = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    if postgres and env.bool("DATABASE_PREPARED_STATEMENTS", default=True):
        DATABASES["default"].setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 5})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- i18n: the web UI speaks Chinese by default, English on request ----------------------------
LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env.str("TIME_ZONE", default="Asia/Shanghai")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "novelsite" / "static"]
# WhiteNoise serves them (gzip/brotli, far-future caching of hashed names) wherever Django runs, so a
# deployment's pages are styled without a separate file server. The hashed manifest needs
# collectstatic (the Docker image runs it); without DEBUG and without a manifest, run
# `manage.py collectstatic` first or set STATIC_MANIFEST=false.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
                    if env.bool("STATIC_MANIFEST", default=not DEBUG) else
                    "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # also the app's own static folders, so a checkout serves its files as they are
# The web pages log people in themselves; the admin keeps its own login form.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "projects-home"
LOGOUT_REDIRECT_URL = "login"

# --- Security ----------------------------------------------------------------------------------
# DEBUG false is production: cookies only over HTTPS, HTTPS enforced, HSTS. Each can be turned off
# from the environment (e.g. SECURE_SSL_REDIRECT=false behind a proxy that redirects itself).
PRODUCTION = not DEBUG
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=PRODUCTION)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=PRODUCTION)
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=PRODUCTION)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container health check speaks plain HTTP on loopback
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=PRODUCTION)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=PRODUCTION)
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):  # only behind a proxy that sets it
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Django's CSP middleware. Scripts only from this origin (an inline <script> needs
# nonce="{{ csp_nonce }}"); styles may be inline because the admin's JSON editor (django-jsonform)
# and Swagger UI set them. The stricter style policy is reported only, to see what would break.
_CSP_BASE = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CSP = {**_CSP_BASE, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]}
SECURE_CSP_REPORT_ONLY = {**_CSP_BASE, "style-src": [CSP.SELF, CSP.NONCE]}

# --- REST API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: an anonymous API call gets 401 with WWW-Authenticate, not a bare 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "projects.api_errors.novelsite_exception_handler",
    # JSON bodies nested at most 64 levels, without NUL or unpaired surrogates (else 400 parse_error).
    "DEFAULT_PARSER_CLASSES": [
        "projects.api.parsers.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
# What LLM work people may start, on the API and the web pages alike (pipeline/nightly/spending.py): a rate
# per person and per project, how many runs of one project may work at once (promotions included),
# and how many projects a person may own (staff exempt). The daily cap on what runs started by hand
# spend is a project setting (manual_cost_cap_usd).
NOVELSITE_SPENDING = {
    "user_rate": env.str("NOVELSITE_LLM_RATE_PER_USER", default=env.str("NOVELSITE_API_LLM_RATE", default="30/hour")),
    "project_rate": env.str("NOVELSITE_LLM_RATE_PER_PROJECT", default="60/hour"),
    "max_active_runs": env.int("NOVELSITE_MAX_ACTIVE_RUNS_PER_PROJECT", default=1),
    "max_projects_per_user": env.int("NOVELSITE_MAX_PROJECTS_PER_USER", default=5),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Novelsite API",
    "VERSION": "0.1.0",
    "DESCRIPTION": "Projects, story data and the writing pipeline, scoped by project membership.",
    "SWAGGER_UI_DIST": "SIDECAR",  # drf-spectacular-sidecar: no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 999_999_999}},
    "ENUM_NAME_OVERRIDES": {
        "VolumeStatusEnum": "projects.models.VolumeStatus",
        "CharacterStatusEnum": "projects.models.CharacterStatus",
        "StorylineStatusEnum": "projects.models.StorylineStatus",
        "ForeshadowStatusEnum": "projects.models.foreshadowing.ForeshadowStatus",
        "RunStatusEnum": "pipeline.models.RunStatus",
        "GateStatusEnum": "pipeline.models.GateStatus",
        "StageRunStatusEnum": ["running", "succeeded", "failed", "abandoned"],
    },
}

# --- Celery ------------------------------------------------------------------------------------
# Long LLM stages: ack late so a killed worker's task is redelivered, one message per worker
# process at a time, and a Redis visibility timeout well above the hard time limit plus the
# longest retry countdown. A dead worker's stage is recovered by the short, renewed lease and the
# reconciler (NOVELSITE_LEASE_SECONDS below), not by Redis redelivering its message: so the
# visibility timeout stays long. Shortened to the lease, Redis would hand every running stage
# (which then finds the live lease and does nothing) and every retry waiting for its countdown
# (which then runs twice, early) to a second worker.
REDIS_URL = env.str("REDIS_URL", default="")
# The cache holds the live progress of running stages and the API's throttle counters. The default
# is per process; with workers and several web processes set CACHE_URL to a shared cache (a Redis
# database other than the broker's, e.g. redis://127.0.0.1:6379/1) so pages see what workers write.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
# Eager mode only: a web request that starts LLM work answers at once and the run's stages go on in
# a background thread of the web process (pipeline/runtime/background.py); the page follows them. Off,
# the stages run inside the request (the tests that drive the pipeline through the web client).
# The CLI always waits for its runs.
NOVELSITE_EAGER_IN_BACKGROUND = env.bool("NOVELSITE_EAGER_IN_BACKGROUND", default=True)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=15 * 60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=16 * 60)
NOVELSITE_MAX_RETRY_COUNTDOWN = 10 * 60  # the longest backoff a stage task may ask for
# A failed stage's first retry waits up to this many seconds (Celery's full jitter), doubling per
# retry up to NOVELSITE_MAX_RETRY_COUNTDOWN. Read when the task module is imported; at least 1.
NOVELSITE_STAGE_RETRY_BACKOFF = env.int("NOVELSITE_STAGE_RETRY_BACKOFF", default=15)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=2 * 60 * 60)
}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker goes away keeps trying to reconnect for as long as it takes (Celery's
# default gives up after 100 tries, about 50 minutes, and exits). A worker can still exit on a
# broker failure (kombu's Redis transport, issue #15 item 11): run workers under a supervisor that
# restarts them (docker/README.md, "Supervision").
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Celery's Django fixup closes the worker's database connection before and after every task
# unless this is set, whatever CONN_MAX_AGE says: a stage would open a new PostgreSQL connection
# (a backend with cold caches) each time. Reuse one for this many tasks; CONN_HEALTH_CHECKS
# replaces a connection that died meanwhile.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=200)
# The nightly autopilot batches (pipeline/nightly/batches.py) start at NOVELSITE_NIGHTLY_AT ("HH:MM", in
# TIME_ZONE); a malformed value stops the start-up with the value named.
NOVELSITE_NIGHTLY_AT = env.str("NOVELSITE_NIGHTLY_AT", default="02:00")
# How long a stage's lease lasts unless its worker renews it (a heartbeat renews it every third of
# it while the stage waits on the model), and how often beat runs the reconciler, which hands a
# stage whose lease expired (its worker died) or whose wake-up was lost to another worker. A dead
# worker's stage resumes within about the sum of the two (2 minutes by default).
NOVELSITE_LEASE_SECONDS = env.int("NOVELSITE_LEASE_SECONDS", default=60)
NOVELSITE_RECONCILE_SECONDS = env.int("NOVELSITE_RECONCILE_SECONDS", default=60)
CELERY_BEAT_SCHEDULE: dict = {
    "reconcile-runs": {"task": "pipeline.tasks.runs_reconcile_task", "schedule": float(NOVELSITE_RECONCILE_SECONDS)},
    "nightly-batches": {"task": "pipeline.tasks.nightly_batches_task",
                        "schedule": nightly_crontab(NOVELSITE_NIGHTLY_AT)},
}

# --- LLM ---------------------------------------------------------------------------------------
NOVELSITE_LLM_BACKEND = env.str("NOVELSITE_LLM_BACKEND", default="offline")
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="")
# The SDK's own retries and timeout stay well below the Celery soft time limit, so a stuck call
# surfaces as an LLM error the stage can retry, not as a killed task.
ANTHROPIC_TIMEOUT_SECONDS = env.float("ANTHROPIC_TIMEOUT_SECONDS", default=300.0)
ANTHROPIC_MAX_RETRIES = env.int("ANTHROPIC_MAX_RETRIES", default=2)
# The openai backend (any OpenAI-compatible Chat Completions server); the SDK's own variable names.
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
OPENAI_TIMEOUT_SECONDS = env.float("OPENAI_TIMEOUT_SECONDS", default=300.0)
OPENAI_MAX_RETRIES = env.int("OPENAI_MAX_RETRIES", default=2)
# The model of the anthropic and openai providers; unset, anthropic writes with claude-sonnet-5-5 and
# openai refuses to start (novelsite/llm_providers.py).
NOVELSITE_DEFAULT_MODEL = env.str("NOVELSITE_DEFAULT_MODEL", default="")
# How long the prompt cache keeps a nightly batch's book bible: "5m" (the API's default) or "1h".
# An hour costs twice the input price per cache write instead of 1.25 times, and pays off when the
# chapters of a batch are more than 5 minutes apart. Runs started by hand always use 5 minutes.
NOVELSITE_BATCH_CACHE_TTL = env.str("NOVELSITE_BATCH_CACHE_TTL", default="5m")
# Named providers beside the built-in offline, anthropic and openai ones (novelsite/llm_providers.py;
# README "Model providers"). Keys stay in the environment variables the rows name.
# Malformed JSON is kept as text, so `manage.py check` can say so instead of a traceback at import.
try:
    NOVELSITE_LLM_PROVIDERS: list | str = env.json("NOVELSITE_LLM_PROVIDERS_JSON", default=[])
except ValueError:
    NOVELSITE_LLM_PROVIDERS = env.str("NOVELSITE_LLM_PROVIDERS_JSON")
NOVELSITE_LLM_PRICES: dict = {}  # per-model price overrides of novelsite/llm_prices.py
# The offline backend's misbehaviour on demand (pipeline/llm/offline): latency, faults, low scores.
# JSON in the environment so a worker process can be told too, e.g.
# NOVELSITE_OFFLINE_JSON='{"latency_ms": 200, "faults": {"draft": {"kind": "rate_limit", "rate": 0.2}}}'
NOVELSITE_OFFLINE = env.json("NOVELSITE_OFFLINE_JSON", default={})

# --- E-mail (the nightly batches' morning summary, to members who opt in) ---------------------------
# Django 6.1's MAILERS (the EMAIL_HOST-style settings are deprecated), filled from the environment.
# The console backend prints messages on a laptop; a deployment sets the SMTP backend and its host.
# Production (DEBUG false) defaults to SMTP: check --deploy refuses the console backend there.
_DEFAULT_EMAIL_BACKEND = ("django.core.mail.backends.console.EmailBackend" if DEBUG
                          else "django.core.mail.backends.smtp.EmailBackend")
MAILERS = {"default": {"BACKEND": env.str("EMAIL_BACKEND", default=_DEFAULT_EMAIL_BACKEND)}}
if MAILERS["default"]["BACKEND"] == "django.core.mail.backends.smtp.EmailBackend":
    MAILERS["default"]["OPTIONS"] = {  # other backends refuse options they do not know
        "host": env.str("EMAIL_HOST", default="localhost"), "port": env.int("EMAIL_PORT", default=25),
        "username": env.str("EMAIL_HOST_USER", default=""), "password": env.str("EMAIL_HOST_PASSWORD", default=""),
        "use_tls": env.bool("EMAIL_USE_TLS", default=False), "use_ssl": env.bool("EMAIL_USE_SSL", default=False),
        "timeout": env.int("EMAIL_TIMEOUT", default=30),
    }
# Where a real mail server is configured (EMAIL_HOST, or an EMAIL_BACKEND other than the console's or
# the dummy one), a member invited with a new account gets their one-time link by e-mail; otherwise
# the owner is shown the link to pass on (projects/services/invitations.py).
NOVELSITE_EMAIL_CONFIGURED = env.bool("NOVELSITE_EMAIL_CONFIGURED", default=bool(env.str("EMAIL_HOST", default="")) or (
    env.str("EMAIL_BACKEND", default="") not in ("", "django.core.mail.backends.console.EmailBackend",
                                                 "django.core.mail.backends.dummy.EmailBackend")))
# The one-time link to set a new member's password (Django's password-reset token) lasts this long.
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_TIMEOUT", default=3 * 24 * 3600)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="novelsite@localhost")
EMAIL_SUBJECT_PREFIX = env.str("EMAIL_SUBJECT_PREFIX", default="[Novelsite] ")

# --- Sign-in throttling (novelsite/login_throttle.py; counters in CACHES) -------------------------
NOVELSITE_LOGIN_MAX_FAILURES_PER_ACCOUNT = env.int("NOVELSITE_LOGIN_MAX_FAILURES_PER_ACCOUNT", default=5)
NOVELSITE_LOGIN_MAX_FAILURES_PER_ADDRESS = env.int("NOVELSITE_LOGIN_MAX_FAILURES_PER_ADDRESS", default=20)
NOVELSITE_LOGIN_FAILURE_WINDOW = env.int("NOVELSITE_LOGIN_FAILURE_WINDOW", default=15 * 60)
NOVELSITE_LOGIN_LOCKOUT_SECONDS = env.int("NOVELSITE_LOGIN_LOCKOUT_SECONDS", default=15 * 60)
# How many proxies in front of the app append the address they saw to X-Forwarded-For (the docker
# stack's nginx: 1). The sign-in throttle counts the address the outermost of them saw; 0 (no proxy)
# counts REMOTE_ADDR. Never more than the real number: a client could then choose its own address.
NOVELSITE_PROXY_HOPS = env.int("NOVELSITE_PROXY_HOPS", default=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # one line per task is noise in the eager demo; workers still log task failures
    "loggers": {"celery.app.trace": {"level": env.str("CELERY_TRACE_LOG_LEVEL", default="WARNING")}},
}

# --- Request bodies (projects/body_limits.py) -------------------------------------------------
# Every view but the uploads refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE from its Content-Length
# (413) before reading it; uploaded files above FILE_UPLOAD_MAX_MEMORY_SIZE go to a temporary file.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)  # Django's 2.5 MB
FILE_UPLOAD_MAX_MEMORY_SIZE = env.int("FILE_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)
DATA_UPLOAD_MAX_NUMBER_FILES = 10  # an import takes one file
# The largest zip an import accepts (web form and API), the whole request body included. The docker
# stack's nginx (docker/nginx/novelsite.conf.template, client_max_body_size) must allow as much.
NOVELSITE_IMPORT_MAX_UPLOAD_BYTES = env.int("NOVELSITE_IMPORT_MAX_UPLOAD_BYTES", default=50 * 1024 * 1024)

# --- Import limits for uploaded or local novel trees ---------------------------------------------
NOVELSITE_IMPORT_MAX_FILE_BYTES = env.int("NOVELSITE_IMPORT_MAX_FILE_BYTES", default=10 * 1024 * 1024)
NOVELSITE_IMPORT_MAX_TREE_BYTES = env.int("NOVELSITE_IMPORT_MAX_TREE_BYTES", default=200 * 1024 * 1024)
NOVELSITE_IMPORT_MAX_FILES = env.int("NOVELSITE_IMPORT_MAX_FILES", default=20_000)
