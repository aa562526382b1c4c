"""Malformed requests a signed-in user can send are refused with a 400 or 404, never a 500: in the
API's error shape on /api/, as an error page (or a form error) on the web pages, and without a
traceback in production. One test per cause found by the probes of #15 (item 5), plus the
generic guards: the checked JSON parser, NUL refused at the edge, one integer parser."""
from __future__ import annotations

import base64

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from pipeline.models import PipelineRun
from projects.models import Project
from projects.query_params import plain_int
from tests.api_fixtures import World

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")


def _api(world: World, who: str = "owner"):
    client = world.client(who)
    client.raise_request_exception = False  # a 500 is a response here, as a user would get it
    return client


def _web(world: World, who: str = "owner") -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(world.users[who])
    return client


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert set(body) == {"code", "message", "extra"} and body["code"] == code, body
    return body


def _cursor(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


SETTINGS_FORM = {"title": "雪原", "autopilot_chapters_per_night": 0, "autopilot_cost_cap_usd": "0",
                 "stage_models": "", "gate_settings": ""}


# --- an invalid pagination cursor ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("cursor", [_cursor("p=abc"), _cursor("p=1%00"), _cursor("r=1&p=\x00"),
                                    _cursor("p=1.5"), _cursor("o=x")])
def test_an_invalid_cursor_is_a_404_in_the_error_shape(world, cursor):
    for path in ("/chapters", "/members", ""):  # ordered by number, by pk, and the project list
        url = f"/api/projects/{world.project.slug}{path}" if path else "/api/projects"
        _error(_api(world).get(url, {"cursor": cursor}), 404, "not_found")


@pytest.mark.django_db
def test_a_cursor_with_nul_on_a_list_ordered_by_text_is_a_404(world):
    _error(_api(world).get(f"/api/projects/{world.project.slug}/characters", {"cursor": _cursor("p=a\x00")}),
           404, "not_found")


# --- JSON nested 100,000 deep -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("POST", "", '{"slug": "deep", "title": ' + _nested(100_000) + "}"),
    ("POST", "/promotions", '{"chapter": 1, "constraints": ' + _nested(100_000) + "}"),
    ("PATCH", "/{slug}", '{"gate_settings": {"x": ' + _nested(100_000) + "}}"),
    ("PATCH", "/{slug}", '{"stage_models": ' + _nested(65) + "}"),  # parses, but deeper than allowed
], ids=["create", "promotion", "settings", "just-over-the-bound"])
def test_json_nested_too_deep_is_a_400_and_writes_nothing(world, method, suffix, body):
    before = (Project.objects.count(), PipelineRun.objects.count())
    slug = world.project.slug
    url = "/api/projects" + (suffix.format(slug=slug) if "{" in suffix else (f"/{slug}{suffix}" if suffix else ""))
    response = _api(world).generic(method, url, body, content_type="application/json")
    assert "64 levels" in _error(response, 400, "parse_error")["message"]
    assert (Project.objects.count(), PipelineRun.objects.count()) == before


@pytest.mark.django_db
def test_json_of_ordinary_depth_is_still_accepted(world):
    response = _api(world).patch(f"/api/projects/{world.project.slug}", {"stage_models": {"draft": "m-1"}},
                                 format="json")
    assert response.status_code == 200, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("value", [_nested(100_000), '{"draft": "a\\u0000b"}'], ids=["deep", "nul"])
def test_the_web_settings_form_shows_bad_json_as_a_form_error(world, value):
    response = _web(world).post(f"/p/{world.project.slug}/settings/", {**SETTINGS_FORM, "gate_settings": value})
    assert response.status_code == 200
    assert response.context["form"].errors["gate_settings"]
    assert Project.objects.get(pk=world.project.pk).title != "雪原"


# --- a Unicode digit where a number is expected ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/p/{slug}/state/?chapter=²", "/p/{slug}/chapters/?volume=²",
                                  "/p/{slug}/runs/?chapter=²", "/p/{slug}/runs/?chapter=١",
                                  "/p/{slug}/state/?chapter=1e3"])
def test_a_number_that_is_not_plain_digits_is_a_404_page(world, path):
    response = _web(world).get(path.format(slug=world.project.slug))
    assert response.status_code == 404


@pytest.mark.django_db
def test_plain_numbers_and_blank_parameters_still_work_on_the_web(world):
    web, slug = _web(world), world.project.slug
    assert web.get(f"/p/{slug}/state/?chapter=1").status_code == 200
    assert web.get(f"/p/{slug}/state/?chapter=").status_code == 200
    assert web.get(f"/p/{slug}/chapters/?volume=1").status_code == 200
    assert web.get(f"/p/{slug}/runs/?chapter=1").status_code == 200


@pytest.mark.django_db
def test_a_unicode_digit_in_the_api_volume_filter_is_a_404(world):
    _error(_api(world).get(f"/api/projects/{world.project.slug}/chapters", {"volume": "²"}), 404, "not_found")


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "target"), [("chapter", "²"), ("volume", "²"), ("chapters", "1-²"),
                                              ("chapters", "١-2")])
def test_a_unicode_digit_as_a_promotion_target_is_refused_on_the_web(world, kind, target):
    response = _web(world, "editor").post(f"/p/{world.project.slug}/promotions/",
                                          {"target_kind": kind, "target": target}, follow=True)
    assert response.status_code == 200
    assert [str(m) for m in response.context["messages"]]  # the reason is shown
    assert not PipelineRun.objects.exists()


@pytest.mark.django_db
def test_a_unicode_digit_as_a_promotion_target_is_refused_by_the_api_and_the_cli(world):
    response = _api(world, "editor").post(f"/api/projects/{world.project.slug}/promotions", {"chapter": "²"},
                                          format="json")
    _error(response, 400, "invalid")
    with pytest.raises(CommandError, match="range"):
        call_command("novel", "promote", world.project.slug, "--chapters", "²-3")
    assert not PipelineRun.objects.exists()


def test_one_integer_parser_accepts_only_plain_ascii_digits():
    assert [plain_int(v) for v in ("7", " 7 ", "007", "999999999")] == [7, 7, 7, 999_999_999]
    assert [plain_int(v) for v in ("²", "١", "+7", "-7", "7_000", "1e3", "", "1234567890", "7\x00", None)] == \
        [None] * 10


# --- a NUL byte in a path segment or a JSON setting -----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["%00", "/characters/a%00b", "/world-docs/a%00b", "/members/a%00b",
                                    "/chapters?volume=1%00"])
def test_nul_in_an_api_address_is_a_400_in_the_error_shape(world, suffix):
    _error(_api(world).get(f"/api/projects/{world.project.slug}{suffix}"), 400, "invalid")


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/p/{slug}%00/", "/p/{slug}/state/?chapter=1%00", "/p/{slug}/world/?x=%00"])
def test_nul_in_a_web_address_is_a_400_page(world, path):
    assert _web(world).get(path.format(slug=world.project.slug)).status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize("body", ['{"stage_models": {"draft": "a\\u0000b"}}', '{"gate_settings": {"a\\u0000": 1}}',
                                  '{"title": "a\\u0000"}', '{"stage_models": {"draft": "\\ud800"}}'])
def test_nul_or_a_lone_surrogate_in_json_is_a_400_and_changes_nothing(world, body):
    before = Project.objects.values().get(pk=world.project.pk)
    response = _api(world).generic("PATCH", f"/api/projects/{world.project.slug}", body,
                                   content_type="application/json")
    _error(response, 400, "parse_error")
    assert Project.objects.values().get(pk=world.project.pk) == before


# --- production: an error page or the error shape, never a traceback ------------------------------------


@pytest.mark.django_db
def test_in_production_api_errors_keep_the_shape_and_web_errors_show_a_page(world, settings, monkeypatch):
    settings.DEBUG = False
    _error(_api(world).get("/api/no-such-endpoint"), 404, "not_found")
    _error(_api(world).get(f"/api/projects/{world.project.slug}/characters/a%00b"), 400, "invalid")

    def broken(**kwargs):
        raise RuntimeError("secret detail")
    monkeypatch.setattr("projects.api.projects.projects_for_user", broken)
    monkeypatch.setattr("projects.views.projects.projects_for_user", broken)
    api = _api(world).get("/api/projects")
    assert _error(api, 500, "server_error") and b"secret detail" not in api.content
    page = _web(world).get("/")
    assert page.status_code == 500 and b"Traceback" not in page.content and b"secret detail" not in page.content
    missing = _web(world).get(f"/p/{world.project.slug}/state/?chapter=%C2%B2")
    assert missing.status_code == 404 and b"Traceback" not in missing.content


@pytest.mark.django_db
@pytest.mark.parametrize("value, words", [
    ("{not json", "JSON"), ('{"lints": {"no_such_threshold": 1}}', "no_such_threshold"),
    ('{"lints": {"simile_max_per_kchars": -1}}', "simile_max_per_kchars"), ('{"word_count": {"min": "many"}}', "min"),
], ids=["not-json", "unknown-threshold", "negative", "not-a-number"])
def test_the_lint_settings_are_refused_in_words_and_nothing_is_saved(world, value, words):
    response = _web(world).post(f"/p/{world.project.slug}/settings/", {**SETTINGS_FORM, "manual_cost_cap_usd": "20",
                                                                        "lint_settings": value})
    assert response.status_code == 200 and words in response.content.decode()
    assert Project.objects.get(pk=world.project.pk).title != "雪原"


@pytest.mark.django_db
def test_the_lint_settings_are_saved_from_the_settings_page_and_the_lints_use_them(world):
    from pipeline.chapter.lint import project_lint_settings

    value = '{"lints": {"simile_max_per_kchars": 4}, "word_count": {"min": 1500, "max": 6000}}'
    response = _web(world).post(f"/p/{world.project.slug}/settings/", {**SETTINGS_FORM, "manual_cost_cap_usd": "20",
                                                                        "lint_settings": value})
    assert response.status_code == 302, (response.context["form"].errors, response.context["form"].non_field_errors())
    project = Project.objects.get(pk=world.project.pk)
    settings = project_lint_settings(project)
    assert settings.thresholds["simile_max_per_kchars"] == 4 and settings.word_range == (1500, 6000)
    patched = _api(world).patch(f"/api/projects/{project.slug}", {"lint_settings": {"lints": {"em_dash_max": -2}}},
                                format="json")
    assert patched.status_code == 400 and Project.objects.get(pk=project.pk).lint_settings["lints"] == {
        "simile_max_per_kchars": 4}
