"""Security settings and helpers: ``check --deploy`` clean with production settings, no start-up
without a secret key, security headers and CSP on responses, the API docs served offline, and
user Markdown rendered sanitised."""
from __future__ import annotations

import secrets
import sys

import pytest

from tests.test_runtime import _controlled_env, _run, _skip_if_dotenv

PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "novel.example.com",
}


def test_check_deploy_is_clean_with_production_settings():
    proc = _run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                _controlled_env(**PRODUCTION_ENV))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout, proc.stdout + proc.stderr


def test_production_refuses_to_start_without_a_secret_key():
    _skip_if_dotenv()  # a .env file could supply the key the environment leaves out
    env = _controlled_env(**{k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"})
    proc = _run([sys.executable, "manage.py", "check"], env)
    assert proc.returncode != 0
    assert "SECRET_KEY must be set in the environment when DEBUG is false" in proc.stderr


PRODUCTION_PROBE = r"""
import json
import django
django.setup()
from django.conf import settings as s
print(json.dumps({name: getattr(s, name) for name in (
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS",
    "SECURE_CONTENT_TYPE_NOSNIFF", "SECURE_REFERRER_POLICY", "X_FRAME_OPTIONS")}))
"""


def test_production_cookies_are_secure_and_https_is_enforced():
    import json

    proc = _run([sys.executable, "-c", PRODUCTION_PROBE], _controlled_env(**PRODUCTION_ENV))
    assert proc.returncode == 0, proc.stderr
    values = json.loads(proc.stdout.strip().splitlines()[-1])
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"] and values["SECURE_SSL_REDIRECT"]
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["X_FRAME_OPTIONS"] == "DENY" and values["SECURE_CONTENT_TYPE_NOSNIFF"]


@pytest.mark.django_db
def test_responses_carry_csp_and_security_headers(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp
    assert "Content-Security-Policy-Report-Only" in response
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


@pytest.mark.django_db
def test_swagger_ui_is_served_offline_from_the_sidecar(client):
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui-dist" in html or "drf_spectacular_sidecar" in html
    assert "cdn" not in html.lower() and "http://" not in html and "https://" not in html
    script = client.get("/api/docs/?script=").content.decode()
    assert "/api/schema/" in script
    assert client.get("/api/schema/").status_code == 200


# --- Markdown ---------------------------------------------------------------------------------------

HOSTILE_MARKDOWN = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[点我](javascript:alert(1))",
    "[点我](JaVaScRiPt:alert(1))",
    "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>",
    "<iframe src=https://evil.example></iframe>",
    "<svg onload=alert(1)>",
    "<p style=\"background:url(javascript:alert(1))\">x</p>",
    "<<script>script>alert(1)<</script>/script>",
    "```\n</code><script>alert(1)</script>\n```",
    "<form action=https://evil.example><input name=q></form>",
    "![x](x\" onerror=\"alert(1))",
]


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN)
def test_markdown_never_lets_script_through(source):
    from projects.markdown import render_markdown

    html = str(render_markdown(source)).lower()
    for needle in ("<script", "onerror", "onload", "javascript:", "<iframe", "<svg", "style=", "data:text",
                   "<form", "<input"):
        assert needle not in html, (source, html)


def test_markdown_keeps_ordinary_formatting():
    from projects.markdown import render_markdown

    html = render_markdown("# 北境\n\n**林枫**的[地图](https://example.com/map)\n\n- 雪原\n- 魔都\n\n"
                           "|城|人口|\n|-|-|\n|魔都|百万|")
    assert "<h1>北境</h1>" in html and "<strong>林枫</strong>" in html
    assert '<a href="https://example.com/map" rel="noopener noreferrer nofollow">地图</a>' in html
    assert "<li>雪原</li>" in html and "<td>魔都</td>" in html
    assert render_markdown(None) == ""
