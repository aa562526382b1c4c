"""The runtime a deployer relies on: settings from the environment, Celery configuration that
cannot be silently misspelled, health and management checks, and the real services (PostgreSQL,
a Redis broker with a real worker).

Settings are module-level, so everything that depends on the environment at import time runs in a
``python`` subprocess with a controlled environment (one subprocess per environment combination,
printing everything as JSON).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SUBPROCESS_TIMEOUT = 60

# Prints the settings and the Celery app's view of them as one JSON object.
SETTINGS_PROBE = r"""
import json

import django

django.setup()
from django.conf import settings as s

from novelsite.celery import app

db = s.DATABASES["default"]
c = app.conf
print(json.dumps({
    "DEBUG": s.DEBUG,
    "ALLOWED_HOSTS": s.ALLOWED_HOSTS,
    "SECRET_KEY": s.SECRET_KEY,
    "BASE_DIR": str(s.BASE_DIR),
    "db": {"ENGINE": db["ENGINE"], "NAME": str(db["NAME"]), "HOST": db.get("HOST"),
           "OPTIONS": db.get("OPTIONS", {})},
    "REDIS_URL": s.REDIS_URL,
    "NOVELSITE_LLM_BACKEND": s.NOVELSITE_LLM_BACKEND,
    "NOVELSITE_MAX_RETRY_COUNTDOWN": s.NOVELSITE_MAX_RETRY_COUNTDOWN,
    "settings": {
        "always_eager": s.CELERY_TASK_ALWAYS_EAGER,
        "eager_propagates": s.CELERY_TASK_EAGER_PROPAGATES,
        "broker_url": s.CELERY_BROKER_URL,
        "acks_late": s.CELERY_TASK_ACKS_LATE,
        "reject_on_worker_lost": s.CELERY_TASK_REJECT_ON_WORKER_LOST,
        "prefetch_multiplier": s.CELERY_WORKER_PREFETCH_MULTIPLIER,
        "soft_time_limit": s.CELERY_TASK_SOFT_TIME_LIMIT,
        "time_limit": s.CELERY_TASK_TIME_LIMIT,
        "visibility_timeout": s.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"],
        "db_reuse_max": s.CELERY_DB_REUSE_MAX,
    },
    "app": {
        "always_eager": c.task_always_eager,
        "eager_propagates": c.task_eager_propagates,
        "broker_url": c.broker_url,
        "acks_late": c.task_acks_late,
        "reject_on_worker_lost": c.task_reject_on_worker_lost,
        "prefetch_multiplier": c.worker_prefetch_multiplier,
        "soft_time_limit": c.task_soft_time_limit,
        "time_limit": c.task_time_limit,
        "visibility_timeout": c.broker_transport_options["visibility_timeout"],
        "db_reuse_max": c.get("CELERY_DB_REUSE_MAX"),  # the key Celery's Django fixup reads
    },
}, default=str))
"""

# Configures the Celery app and reports whether that raised ImproperlyConfigured.
CELERY_CONFIGURE_PROBE = r"""
import json

import django

django.setup()
from django.core.exceptions import ImproperlyConfigured

from novelsite.celery import app

try:
    app.conf.task_acks_late
except ImproperlyConfigured as exc:
    print(json.dumps({"raised": "ImproperlyConfigured", "message": str(exc)}))
else:
    print(json.dumps({"raised": None}))
"""

# A deployment's environment, as opposed to the laptop defaults.
DEPLOYED_ENV = {
    "DATABASE_URL": "postgres://novel:pw@db.internal:5432/novelsite",
    "REDIS_URL": "redis://redis.internal:6379/3",
    "DEBUG": "false",
    "ALLOWED_HOSTS": "novel.example.com,www.novel.example.com",
    "SECRET_KEY": "deployed-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
    "NOVELSITE_LLM_BACKEND": "anthropic",
    "CELERY_VISIBILITY_TIMEOUT": "10800",
}


def _controlled_env(**overrides: str) -> dict[str, str]:
    """A minimal environment: none of the caller's DATABASE_URL, REDIS_URL, DEBUG, ... leak in."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env["DJANGO_SETTINGS_MODULE"] = "novelsite.settings"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(overrides)
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT
    )


def _probe(script: str, env: dict[str, str]) -> dict:
    proc = _run([sys.executable, "-c", script], env)
    assert proc.returncode == 0, f"probe failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _skip_if_dotenv() -> None:
    # settings.py reads <project>/.env for variables the environment does not set, so the
    # "nothing set" defaults cannot be observed on a machine that has one.
    if (PROJECT_ROOT / ".env").exists():
        pytest.skip(f"{PROJECT_ROOT / '.env'} exists and would supply values the defaults tests leave unset")


@pytest.fixture(scope="module")
def default_config() -> dict:
    """Settings with no configuration at all in the environment (the laptop defaults)."""
    _skip_if_dotenv()
    return _probe(SETTINGS_PROBE, _controlled_env())


@pytest.fixture(scope="module")
def deployed_config() -> dict:
    """Settings with a production-like environment."""
    return _probe(SETTINGS_PROBE, _controlled_env(**DEPLOYED_ENV))


# --- 1. Settings from the environment ----------------------------------------------------------


def test_without_database_url_uses_sqlite_file_under_project_root_with_immediate_transactions(default_config):
    db = default_config["db"]
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    path = Path(db["NAME"])
    assert path.is_absolute(), f"SQLite path must be absolute, got {db['NAME']!r}"
    assert path.parent == PROJECT_ROOT
    assert Path(default_config["BASE_DIR"]) == PROJECT_ROOT
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_postgres_database_url_selects_postgresql(deployed_config):
    db = deployed_config["db"]
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert db["NAME"] == "novelsite"
    assert db["HOST"] == "db.internal"
    assert "transaction_mode" not in db["OPTIONS"]  # a SQLite-only option


def test_without_redis_url_tasks_run_eagerly_and_propagate_errors(default_config):
    for view in ("settings", "app"):
        assert default_config[view]["always_eager"] is True, view
        assert default_config[view]["eager_propagates"] is True, view
    assert default_config["REDIS_URL"] == ""


def test_with_redis_url_tasks_go_to_that_broker_not_eagerly(deployed_config):
    for view in ("settings", "app"):
        assert deployed_config[view]["always_eager"] is False, view
        assert deployed_config[view]["broker_url"] == DEPLOYED_ENV["REDIS_URL"], view


@pytest.mark.parametrize("config_name", ["default_config", "deployed_config"])
def test_celery_crash_safety_settings_reach_the_app(config_name, request):
    config = request.getfixturevalue(config_name)
    for view in ("settings", "app"):  # the app reading them proves the CELERY namespace works
        c = config[view]
        assert c["acks_late"] is True, view
        assert c["reject_on_worker_lost"] is True, view
        assert c["prefetch_multiplier"] == 1, view
        assert c["soft_time_limit"] < c["time_limit"], view
        assert c["visibility_timeout"] > c["time_limit"] + config["NOVELSITE_MAX_RETRY_COUNTDOWN"], view
    assert config["settings"] == config["app"]


@pytest.mark.parametrize("config_name", ["default_config", "deployed_config"])
def test_workers_keep_their_database_connection_between_tasks(config_name, request):
    # Without it Celery's Django fixup opens a new connection for every stage of every chapter.
    assert request.getfixturevalue(config_name)["app"]["db_reuse_max"] >= 50


def test_visibility_timeout_follows_the_environment(deployed_config):
    assert deployed_config["app"]["visibility_timeout"] == int(DEPLOYED_ENV["CELERY_VISIBILITY_TIMEOUT"])


def test_llm_backend_defaults_to_offline_and_follows_the_environment(default_config, deployed_config):
    assert default_config["NOVELSITE_LLM_BACKEND"] == "offline"
    assert deployed_config["NOVELSITE_LLM_BACKEND"] == DEPLOYED_ENV["NOVELSITE_LLM_BACKEND"]


def test_debug_allowed_hosts_and_secret_key_default_for_a_laptop(default_config):
    assert default_config["DEBUG"] is True
    assert "localhost" in default_config["ALLOWED_HOSTS"]
    assert default_config["SECRET_KEY"].startswith("insecure-")


def test_debug_allowed_hosts_and_secret_key_follow_the_environment(deployed_config):
    assert deployed_config["DEBUG"] is False
    assert deployed_config["ALLOWED_HOSTS"] == ["novel.example.com", "www.novel.example.com"]
    assert deployed_config["SECRET_KEY"] == DEPLOYED_ENV["SECRET_KEY"]


# --- 2. A misspelled or unsafe Celery setting fails loudly ------------------------------------


def test_unknown_celery_settings_lists_a_misspelled_name():
    from novelsite.celery_settings import unknown_celery_settings

    settings_like = SimpleNamespace(CELERY_TASK_ACK_LATE=True, CELERY_TASK_ACKS_LATE=True, DEBUG=True)
    assert unknown_celery_settings(settings_like) == ["CELERY_TASK_ACK_LATE"]
    assert unknown_celery_settings() == []  # the real settings are all spelled right


@pytest.fixture
def misspelled_settings_env(tmp_path) -> dict[str, str]:
    (tmp_path / "misspelled_settings.py").write_text(
        "from novelsite.settings import *  # noqa: F403\nCELERY_TASK_ACKS_LAT = True\n"
    )
    return _controlled_env(DJANGO_SETTINGS_MODULE="misspelled_settings", PYTHONPATH=str(tmp_path))


def test_manage_check_fails_on_a_misspelled_celery_setting(misspelled_settings_env):
    proc = _run([sys.executable, "manage.py", "check"], misspelled_settings_env)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "novelsite.E001" in output
    assert "CELERY_TASK_ACKS_LAT" in output


def test_celery_app_refuses_to_configure_with_a_misspelled_setting(misspelled_settings_env):
    result = _probe(CELERY_CONFIGURE_PROBE, misspelled_settings_env)
    assert result["raised"] == "ImproperlyConfigured"
    assert "CELERY_TASK_ACKS_LAT" in result["message"]


def test_manage_check_fails_when_visibility_timeout_is_not_above_time_limit_plus_retry_delay():
    # 16 min hard limit + 10 min retry countdown = 1560 s; 1500 s would redeliver running stages.
    proc = _run([sys.executable, "manage.py", "check"], _controlled_env(CELERY_VISIBILITY_TIMEOUT="1500"))
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "novelsite.E002" in output


def test_check_reports_soft_time_limit_not_below_hard_limit(settings):
    from novelsite.checks import celery_settings_check

    assert celery_settings_check() == []
    settings.CELERY_TASK_SOFT_TIME_LIMIT = settings.CELERY_TASK_TIME_LIMIT
    assert [error.id for error in celery_settings_check()] == ["novelsite.E003"]


def test_check_refuses_a_backoff_of_zero_and_a_rate_that_does_not_parse(settings):
    from novelsite.checks import celery_settings_check

    settings.NOVELSITE_STAGE_RETRY_BACKOFF = 0  # Celery would wait its fixed 3 minutes instead
    settings.NOVELSITE_SPENDING = {**settings.NOVELSITE_SPENDING, "user_rate": "30 an hour", "project_rate": "0/hour"}
    errors = celery_settings_check()
    assert [error.id for error in errors] == ["novelsite.E004", "novelsite.E006", "novelsite.E006"]
    assert "NOVELSITE_STAGE_RETRY_BACKOFF" in errors[0].msg
    assert "NOVELSITE_LLM_RATE_PER_USER" in errors[1].msg and "30 an hour" in errors[1].msg


@pytest.mark.parametrize("text", ["", "30", "30/", "x/hour", "30/week", "-1/hour", "0/minute", "1.5/hour"])
def test_a_spending_rate_that_is_not_a_rate_is_a_value_error(text):
    from pipeline.nightly.spending import Rate

    with pytest.raises(ValueError, match="not a rate"):
        Rate.parse(text)
    assert Rate.parse("30/hour") == Rate(30, 3600) and Rate.parse("5/m") == Rate(5, 60)


# --- 3. Health and management checks -----------------------------------------------------------


@pytest.mark.django_db
def test_healthz_returns_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"


@pytest.mark.django_db
def test_healthz_says_503_when_the_database_does_not_answer(client, monkeypatch):
    from django.db import connection

    monkeypatch.setattr(connection, "is_usable", lambda: False)
    response = client.get("/healthz")
    assert response.status_code == 503 and b"database unavailable" in response.content


@pytest.mark.parametrize(
    "command",
    [["check"], ["makemigrations", "--check", "--dry-run"]],
    ids=["check", "no-missing-migrations"],
)
def test_management_command_passes(command):
    # The caller's own environment: SQLite locally, PostgreSQL + Redis on CI.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "novelsite.settings"}
    proc = _run([sys.executable, "manage.py", *command], env)
    assert proc.returncode == 0, (f"manage.py {' '.join(command)} exited {proc.returncode}:\n"
                                  f"{proc.stdout}\n{proc.stderr}")


# --- 4. Redis broker and a real worker ---------------------------------------------------------


@pytest.mark.redis
def test_task_crosses_the_redis_broker_and_runs_in_a_real_worker(tmp_path):
    import redis
    from celery.result import EagerResult

    from novelsite.celery import app
    from pipeline.tasks import worker_ping_key, worker_ping_task

    # With REDIS_URL set at settings import the app must really send (an eager app would run the
    # task right here and prove nothing).
    assert app.conf.task_always_eager is False
    assert app.conf.broker_url == settings.REDIS_URL

    token = uuid.uuid4().hex
    queue = f"novelsite-test-{token}"  # a private queue: no other worker on this Redis takes the task
    nodename = f"novelsite-test-{token}@pytest"
    key = worker_ping_key(token)
    log_path = tmp_path / "worker.log"
    client = redis.Redis.from_url(settings.REDIS_URL)
    worker_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "novelsite.settings", "PYTHONDONTWRITEBYTECODE": "1"}

    def worker_log() -> str:
        return log_path.read_text(errors="replace")[-4000:] if log_path.exists() else ""

    with open(log_path, "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "novelsite", "worker", "--pool=solo", "--loglevel=info",
             "-Q", queue, "-n", nodename, "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=PROJECT_ROOT, env=worker_env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        # Wait until the worker answers on its control channel.
        deadline = time.monotonic() + 20
        while True:
            assert worker.poll() is None, f"worker exited with {worker.returncode}:\n{worker_log()}"
            if app.control.ping(destination=[nodename], timeout=0.5):
                break
            assert time.monotonic() < deadline, f"worker did not come up within 20 s:\n{worker_log()}"

        replies = app.control.ping(destination=[nodename], timeout=5)
        assert {nodename: {"ok": "pong"}} in replies

        result = worker_ping_task.apply_async(args=[token], queue=queue)
        assert not isinstance(result, EagerResult)

        deadline = time.monotonic() + 20
        while (value := client.get(key)) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert value == token.encode(), f"the worker did not run worker_ping_task within 20 s:\n{worker_log()}"
        assert 0 < client.ttl(key) <= 120
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
        client.delete(key, queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()


# --- 5. PostgreSQL -----------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresql_connection_supports_select_for_update(django_user_model):
    from django.db import connection, transaction

    assert connection.vendor == "postgresql"
    user = django_user_model.objects.create_user(username="lock-probe", password="pw")
    with transaction.atomic():
        locked = list(django_user_model.objects.select_for_update().filter(pk=user.pk))
        assert locked == [user]
        assert connection.in_atomic_block


# --- 3. Workers are kept up when the broker fails (issue #15 item 11) ----------------------------


def test_a_worker_keeps_reconnecting_to_a_lost_broker_instead_of_giving_up():
    from novelsite.celery import app

    # Celery's default gives up after 100 reconnection attempts (about 50 minutes) and exits
    assert app.conf.broker_connection_max_retries is None


def test_the_compose_stack_restarts_workers_and_beat_that_exit():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((PROJECT_ROOT / "docker" / "compose.yaml").read_text())
    for service in ("worker", "beat"):
        assert compose["services"][service]["restart"] in ("always", "unless-stopped"), service
