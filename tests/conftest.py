"""Shared fixtures and the service markers.

``@pytest.mark.postgres``, ``@pytest.mark.redis``, ``@pytest.mark.browser`` and ``@pytest.mark.nginx``
tests need the real services (a browser and nginx count as ones). Without them
they skip with a reason naming the variable to set; with ``REQUIRE_SERVICES=1`` (CI) they fail,
so that nothing that needs a service silently skips.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings

# Fixtures shared by several test modules live in these plugin modules (pytest's way to share
# fixtures across files without importing them into each test module).
pytest_plugins = [
    "tests.admin_fixtures",  # admin_world, novels, owner_client
    "tests.api_fixtures",  # world, no_llm_work, fresh_throttle_cache
    "tests.pipeline_fixtures",  # wakeups, backend_calls
    "tests.worker_harness",  # workers
]

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES", "").lower() in ("1", "true", "yes")


def _missing_service(marker: str) -> str | None:
    if marker == "postgres":
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            return "needs PostgreSQL: set DATABASE_URL=postgres://postgres@127.0.0.1:5432/novelsite"
    if marker == "redis":
        url = settings.REDIS_URL
        if not url:
            return "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0"
        import redis

        try:
            redis.Redis.from_url(url, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            return f"Redis at REDIS_URL={url} is unreachable ({exc})"
    if marker == "browser":
        return _missing_browser()
    if marker == "nginx":
        return _missing_nginx()
    return None


def _missing_nginx() -> str | None:
    """``@pytest.mark.nginx`` tests run the shipped nginx config in front of a real gunicorn."""
    from tests.slow_clients import nginx_binary

    if nginx_binary() is None:
        return "needs nginx: apt-get install -y nginx"
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        return "needs gunicorn: pip install -e '.[dev]'"
    return None


CHROMIUM = os.environ.get("NOVELSITE_CHROMIUM", "/usr/bin/chromium")


SHOTS = Path(settings.BASE_DIR) / "test-output" / "screenshots"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches the system Chromium, headless."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run"]}


def shot(page, name: str) -> None:
    """A full-page screenshot for people to look at (test-output/screenshots/<name>.png)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _missing_browser() -> str | None:
    """``@pytest.mark.browser`` tests drive the system Chromium (Debian's ``chromium``, installed by
    .ci/run) through pytest-playwright; ``playwright install`` cannot download browsers here."""
    try:
        import pytest_playwright  # noqa: F401
    except ImportError:
        return "needs pytest-playwright: pip install -e '.[dev]'"
    if not os.access(CHROMIUM, os.X_OK):
        return f"needs Chromium at {CHROMIUM}: apt-get install -y chromium"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("browser") for item in items):
        # pytest-playwright's sync API keeps an event loop running in the main thread for the
        # whole session (its fixtures are session-scoped), which makes Django refuse every ORM call
        # made from tests afterwards. Nothing here is async, so the guard is lifted for such runs.
        os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in ("postgres", "redis", "browser", "nginx"):
        if item.get_closest_marker(marker) is None:
            continue
        reason = _missing_service(marker)
        if reason is None:
            continue
        if REQUIRE_SERVICES:
            pytest.fail(f"REQUIRE_SERVICES=1 but this test {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture
def make_user(django_user_model):
    def make(username: str, *, staff: bool = True, superuser: bool = False):
        return django_user_model.objects.create_user(
            username=username, password="pw-" + username, is_staff=staff or superuser, is_superuser=superuser
        )

    return make


@pytest.fixture
def sample_project(db):
    from projects.sample_project import sample_project_create

    return sample_project_create()


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, str]]:
    """The pipeline's wake-ups (run id, stage), recorded instead of sent: the test drives the stages."""
    from pipeline.runtime import queueing

    messages: list[tuple[int, str]] = []
    monkeypatch.setattr(queueing, "_send", lambda run_id, stage: messages.append((run_id, stage)))
    return messages


@pytest.fixture(autouse=True)
def _pipeline_inside_requests(settings):
    """Tests that drive the pipeline through the web client expect it done when the request
    returns: the background thread of eager mode (pipeline/runtime/background.py) is opt-in here
    (``background_runs_on``). Anything a test left running is waited for."""
    from pipeline.runtime.background import background_idle_wait

    settings.NOVELSITE_EAGER_IN_BACKGROUND = False
    yield
    background_idle_wait(120)


@pytest.fixture
def background_runs_on(settings):
    """Eager mode as ``make run`` has it: a web request's runs go on in the background."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_EAGER_IN_BACKGROUND = True


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's million rounds cost ~0.8 s per user; tests do not need them.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def fake_anthropic():
    """A fake Anthropic Messages API on a free loopback port (tests/fake_anthropic.py)."""
    from tests.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake_openai():
    """A fake OpenAI-compatible Chat Completions server on a free loopback port (tests/fake_openai.py)."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        yield fake


def member_client(project, make_user, role: str = "editor", *, language: str | None = None):
    """A logged-in test client of a new (non-staff) user who has ``role`` in ``project``; with
    ``language``, the pages answer in it (else Chinese, the default)."""
    from django.test import Client

    from projects.models import Membership, Role

    user = make_user(role, staff=False)
    Membership.objects.create(project=project, user=user, role=Role(role))
    client = Client(HTTP_ACCEPT_LANGUAGE=language) if language else Client()
    client.force_login(user)
    return client


def web_log_in(page, base_url: str, username: str) -> None:
    """Log in on the web pages as a person does, with the password ``make_user`` gave the account."""
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit].primary")


@pytest.fixture
def eager_offline(settings):
    """The pipeline in this process (eager Celery, the laptop default) with the offline model behaving,
    also where REDIS_URL is set as on CI (the real-worker tests are test_pipeline_worker.py's). A
    module asks for it with ``pytest.mark.usefixtures("eager_offline")``; a test may still set
    ``settings.NOVELSITE_OFFLINE`` to make the model misbehave."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
