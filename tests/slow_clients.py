"""The processes and sockets of tests/test_slow_clients.py: a real gunicorn serving the app with the
documented command (docker/Dockerfile's CMD), nginx running the shipped config in front of it, and
clients that trickle their headers or their bodies."""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "docker" / "nginx" / "novelsite.conf.template"
DOCKERFILE = REPO / "docker" / "Dockerfile"
HOST = "localhost"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx")
                                          if os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def render_template(*, upstream: str, port: int) -> str:
    """What the nginx image's envsubst step does with the two variables compose sets."""
    text = TEMPLATE.read_text().replace("${NOVELSITE_UPSTREAM}", upstream).replace("${NGINX_PORT}", f"127.0.0.1:{port}")
    assert "${" not in text, "the template uses a variable neither compose nor this test sets"
    return text


def documented_gunicorn_command(bind: str) -> list[str]:
    """docker/Dockerfile's CMD (the documented web command), bound to ``bind``."""
    match = re.search(r"^CMD (\[.*?\])\s*$", DOCKERFILE.read_text().replace("\\\n", ""), re.M | re.S)
    command = json.loads(match.group(1))
    assert command[0] == "gunicorn" and "0.0.0.0:8000" in command, command
    return [sys.executable, "-m", *[bind if part == "0.0.0.0:8000" else part for part in command]]


def get(port: int, path: str = "/healthz", timeout: float = 2.0) -> tuple[int, float]:
    """(status, seconds) of one GET; status 0 when it timed out or the connection failed."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Host": HOST})
        status = connection.getresponse().status
    except OSError:
        status = 0
    finally:
        connection.close()
    return status, time.perf_counter() - started


def wait_until_healthy(port: int, process: subprocess.Popen, log: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        if get(port, timeout=1.0)[0] == 200:
            return
        time.sleep(0.2)
    raise RuntimeError(f"not healthy after {seconds} s:\n{log.read_text()[-3000:]}")


@contextmanager
def running(command: list[str], *, log: Path, env: dict | None = None, cwd: Path = REPO):
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def gunicorn_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_URL", "CACHE_URL", "DJANGO_"))}
    env.update(DEBUG="0", SECRET_KEY="slow-clients-" + os.urandom(16).hex(), ALLOWED_HOSTS=HOST,
               SECURE_SSL_REDIRECT="0", PYTHONPATH=str(REPO), DJANGO_SETTINGS_MODULE="novelsite.settings")
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/healthz.sqlite3")  # /healthz only pings the database
    return env


def nginx_main_config(tmp: Path, server_file: Path) -> Path:
    """Process plumbing only (pid, logs, temp paths under ``tmp``); everything about requests is in
    the shipped server file it includes."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # else the workers run as nobody and cannot write tmp
    temp = "\n".join(f"    {kind}_temp_path {tmp}/{kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    config = tmp / "nginx.conf"
    config.write_text(f"""{user}daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
{temp}
    include {server_file};
}}
""")
    return config


class Trickler(threading.Thread):
    """A client that sends its request a few bytes at a time and never finishes: headers (one more
    header line per ``interval``) or a body (``chunk`` bytes per ``interval`` of a large upload)."""

    def __init__(self, port: int, *, body: bool, interval: float = 1.0, chunk: int = 512) -> None:
        super().__init__(daemon=True)
        self.port, self.body, self.interval, self.chunk = port, body, interval, chunk
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                if self.body:  # the CSRF check reads a form body that comes with a well-formed cookie
                    sock.sendall(f"POST /login/ HTTP/1.1\r\nHost: {HOST}\r\nCookie: csrftoken={'a' * 32}\r\n"
                                 "Content-Type: application/x-www-form-urlencoded\r\n"
                                 "Content-Length: 2000000\r\n\r\n".encode())
                else:
                    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\n".encode())
                while not self.stop.wait(self.interval):
                    sock.sendall(b"a=" * (self.chunk // 2) if self.body else f"X-Slow-{self.sent}: 1\r\n".encode())
                    self.sent += 1
        except OSError:
            pass  # the server gave up on us: that is allowed


@contextmanager
def tricklers(port: int, *, headers: int, bodies: int):
    clients = [Trickler(port, body=False) for _ in range(headers)] + [Trickler(port, body=True) for _ in range(bodies)]
    for client in clients:
        client.start()
    try:
        time.sleep(1.0)  # all connected and accepted
        yield clients
    finally:
        for client in clients:
            client.stop.set()
        for client in clients:
            client.join(timeout=5)
