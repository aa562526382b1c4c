"""Schemathesis over the app's own OpenAPI schema: generated requests for every operation, sent
as the owner of the sample project (path slugs point at it, and small numbers at its chapter 1),
never get a 5xx. Bounded: a few examples per operation, no deadline."""
from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from tests.api_fixtures import World

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")

MAX_EXAMPLES = 10


# Loaded from the app itself when the module is collected (no server, no database needed).
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.fixture
def keep_test_connection():
    """Django's WSGI handler closes the database connection at the end of each request, which in
    a test transaction (autocommit off) means closing it mid-test; Django's test client disconnects
    the same handler, and so does this for schemathesis's WSGI calls."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_world(world: World, settings, keep_test_connection):
    settings.NOVELSITE_SPENDING = {**settings.NOVELSITE_SPENDING, "user_rate": "100000/minute",
                                   "project_rate": "100000/minute", "max_active_runs": 1000}
    return world


@pytest.mark.django_db(transaction=False)
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_generated_request_gets_a_server_error(case, fuzz_world):
    params = case.path_parameters or {}
    if "slug" in params:
        params["slug"] = fuzz_world.project.slug  # otherwise nearly every request is a plain 404
    for name in ("number", "chapter"):
        if name in params and isinstance(params[name], int) and params[name] % 3 == 0:
            params[name] = 1  # the chapter that exists, with its evaluation and log
    response = case.call(headers={"Authorization": f"Token {fuzz_world.tokens['owner']}"})
    assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.text[:500])
