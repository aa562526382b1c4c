"""Slow clients cannot take the site down (#15, availability). With the documented gunicorn setup
(sync workers), three clients trickling their headers or an upload body held every worker and the
health check timed out. The docker stack now serves through nginx with the shipped config
(docker/nginx/novelsite.conf.template), which reads each request whole before gunicorn sees it.

These tests run that very config in front of a real gunicorn started with the Dockerfile's command,
and check first that the attack does hold gunicorn alone, so that the proxy is what makes the
difference. Marker ``nginx``: skipped without nginx (``apt-get install nginx``), failed under
REQUIRE_SERVICES=1 (.ci/run installs it)."""
from __future__ import annotations

import re
import socket
import time

import pytest
from django.conf import settings

from tests.slow_clients import (
    TEMPLATE,
    documented_gunicorn_command,
    free_port,
    get,
    gunicorn_env,
    nginx_binary,
    nginx_main_config,
    render_template,
    running,
    tricklers,
    wait_until_healthy,
)

pytestmark = pytest.mark.nginx

HEALTHY_SECONDS = 1.0  # every health check behind nginx answers within this, during the attack


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """(gunicorn port, nginx port): gunicorn as documented, nginx with the shipped config."""
    tmp = tmp_path_factory.mktemp("slow-clients")
    app_port, proxy_port = free_port(), free_port()
    server_file = tmp / "novelsite.conf"
    server_file.write_text(render_template(upstream=f"127.0.0.1:{app_port}", port=proxy_port))
    config = nginx_main_config(tmp, server_file)
    nginx = [nginx_binary(), "-p", str(tmp), "-c", str(config)]
    with running(documented_gunicorn_command(f"127.0.0.1:{app_port}"), log=tmp / "gunicorn.log",
                 env=gunicorn_env(tmp)) as app:
        wait_until_healthy(app_port, app, tmp / "gunicorn.log")
        with running(nginx, log=tmp / "nginx.log") as proxy:
            wait_until_healthy(proxy_port, proxy, tmp / "nginx.log")
            yield app_port, proxy_port


def workers_in_dockerfile() -> int:
    command = documented_gunicorn_command("x")
    return int(command[command.index("--workers") + 1])


def test_without_the_proxy_slow_clients_hold_every_gunicorn_worker(stack):
    app_port, _ = stack
    with tricklers(app_port, headers=workers_in_dockerfile() - 1, bodies=1):
        status, _ = get(app_port, timeout=2.0)
    assert status == 0, "gunicorn answered while all its workers were held: the attack below would prove nothing"
    time.sleep(0.5)
    assert get(app_port, timeout=5.0)[0] == 200  # the workers come back once the clients leave


def test_behind_nginx_the_health_check_answers_fast_while_clients_trickle(stack):
    _, proxy_port = stack
    timings = []
    with tricklers(proxy_port, headers=6, bodies=6) as clients:
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            status, seconds = get(proxy_port, timeout=3.0)
            assert status == 200, f"health check failed during the attack after {len(timings)} good ones"
            timings.append(seconds)
            time.sleep(0.25)
        assert all(client.is_alive() for client in clients)  # still trickling: nginx holds them, not gunicorn
    assert len(timings) >= 10 and max(timings) < HEALTHY_SECONDS, timings


def test_nginx_refuses_a_400_mb_body_from_its_length_alone(stack):
    _, proxy_port = stack
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", proxy_port), timeout=5) as sock:
        sock.sendall(b"POST /api/projects/import HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/zip\r\n"
                     b"Content-Length: 419430400\r\n\r\n")
        answer = sock.recv(200).decode("latin-1")
    assert answer.startswith("HTTP/1.1 413") and time.perf_counter() - started < 2.0


def test_the_proxy_accepts_every_upload_the_app_accepts():
    text = TEMPLATE.read_text()
    size = re.search(r"^\s*client_max_body_size (\d+)m;", text, re.M)
    assert size and int(size.group(1)) * 1024 * 1024 >= settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES
    for directive in ("client_header_timeout", "client_body_timeout", "send_timeout", "proxy_buffering on",
                      "proxy_request_buffering on"):
        assert re.search(rf"^\s*{directive}\b", text, re.M), directive
