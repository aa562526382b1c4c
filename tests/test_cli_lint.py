"""``novel lint``: the craft lints of a committed chapter or of a chapter file, as text or as the
``--json`` envelope, with the project's blacklist and thresholds when a project is named."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.models import Project
from tests.factories import ChapterFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("novel", *args, stdout=out)
    return out.getvalue()


def _json(*args: str) -> dict:
    return json.loads(_run("--json", *args))


def _failure(*args: str) -> dict:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("novel", "--json", *args, stdout=out)
    assert exit_.value.code == 2
    envelope = json.loads(out.getvalue())
    assert envelope["ok"] is False and envelope["command"] == "lint"
    return envelope["error"]


def test_lint_file_prints_the_envelope_with_offsets_into_the_decoded_text(tmp_path):
    path = tmp_path / "chapter.md"
    text = "# 第 3 章 雪夜\n\n他停了一下——然后说：「走。」\n"
    path.write_text(text, encoding="utf-8")
    envelope = _json("lint", "--file", str(path))
    assert envelope["ok"] is True and envelope["command"] == "lint"
    data = envelope["data"]
    assert data["chars"] == 21
    rules = {f["rule"]: f for f in data["findings"]}
    assert set(rules) >= {"em_dash", "quote_format"}
    dash = rules["em_dash"]
    assert dash["severity"] == "hard" and dash["count"] == 1 and dash["rate_per_kchars"] == 47.62
    assert dash["evidence"] == [{"start": text.index("——"), "end": text.index("——") + 2, "text": "——"}]
    assert len(data["indicators"]) == 13 and data["indicators"]["em_dash_count"]["zone"] == "red"
    assert "\\u" not in _run("--json", "lint", "--file", str(path))  # Chinese stays readable


def test_lint_file_text_output_names_rules_in_chinese(tmp_path):
    path = tmp_path / "chapter.md"
    path.write_text("# 第 1 章 归来\n\n---\n\n他回来了。\n", encoding="utf-8")
    out = _run("lint", "--file", str(path))
    assert "md_separator" in out and "Markdown 分隔线" in out and "必须修改" in out


def test_lint_file_with_a_project_uses_its_blacklist_and_thresholds(tmp_path):
    from projects.platforms.limits import platform_limits

    project = ProjectFactory(ai_blacklist={"words": ["不禁"]}, target_platform="fanqie")
    path = tmp_path / "chapter.md"
    path.write_text("# 第 2 章 归来\n\n他不禁笑了。\n", encoding="utf-8")
    rules = {f["rule"]: f for f in _json("lint", project.slug, "2", "--file", str(path))["data"]["findings"]}
    assert rules["blacklist"]["evidence"][0]["word"] == "不禁"
    assert rules["word_count"]["limit"] == platform_limits(project)["word_count"]["hard_min"]  # the platform's
    Project.objects.filter(pk=project.pk).update(lint_settings={"word_count": {"min": 100}})  # the project's own
    rules = {f["rule"]: f for f in _json("lint", project.slug, "2", "--file", str(path))["data"]["findings"]}
    assert rules["word_count"]["limit"] == 100
    assert "blacklist" not in {f["rule"] for f in _json("lint", "--file", str(path))["data"]["findings"]}
    rules = {f["rule"]: f for f in _json("lint", project.slug, "5", "--file", str(path))["data"]["findings"]}
    assert "章节号 2" in rules["chapter_heading"]["message"]


def test_lint_a_committed_chapter():
    project = ProjectFactory()
    ChapterFactory(project=project, number=4, title="夜行",
                   text="他停了一下——然后走了。\n\n与此同时，天黑了。此外，风停了。")
    data = _json("lint", project.slug, "4")["data"]
    rules = {f["rule"]: f for f in data["findings"]}
    assert rules["em_dash"]["evidence"][0]["start"] == 5
    assert rules["narration_connector"]["count"] == 2
    assert "chapter_heading" not in rules  # stored text keeps its title apart


@pytest.mark.parametrize("args, words", [
    (("lint",), "--file"),
    (("lint", "no-such-project", "1"), "no-such-project"),
    (("lint", "{slug}", "x1"), "number"),
    (("lint", "{slug}", "0"), "number"),
    (("lint", "{slug}", "99"), "no chapter 99"),
    (("lint", "--file", "/no/such/file.md"), "No chapter file"),
])
def test_bad_arguments_get_a_clear_error_envelope(args, words):
    project = ProjectFactory()
    error = _failure(*(a.replace("{slug}", project.slug) for a in args))
    assert words in error["message"]


def test_hostile_files_are_refused_cleanly(tmp_path):
    latin = tmp_path / "latin1.md"
    latin.write_bytes("# 第 1 章 雪\n\n他来了。".encode("gb18030"))
    assert "UTF-8" in _failure("lint", "--file", str(latin))["message"]
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\0\0\0abc")
    assert "binary" in _failure("lint", "--file", str(binary))["message"]
    assert "No chapter file" in _failure("lint", "--file", str(tmp_path))["message"]  # a directory
    with pytest.raises(CommandError):
        call_command("novel", "lint", "--file", str(latin), stdout=io.StringIO())


def test_a_bom_and_windows_line_ends_keep_offsets_exact(tmp_path):
    path = tmp_path / "bom.md"
    text = "\ufeff# 第 1 章 雪夜\r\n\r\n他停了——又走了。\r\n"
    path.write_bytes(text.encode("utf-8"))
    data = _json("lint", "--file", str(path), )["data"]
    rules = {f["rule"]: f for f in data["findings"]}
    assert "chapter_heading" not in rules
    assert rules["em_dash"]["evidence"][0]["start"] == text.index("——")


def test_unusable_project_settings_are_an_error_not_a_crash(tmp_path):
    project = ProjectFactory(target_platform="qidian")
    Project.objects.filter(pk=project.pk).update(lint_settings={"lints": {"paragraph_max_chars": "long"}})
    path = tmp_path / "chapter.md"
    path.write_text("# 第 1 章 雪\n\n他来了。", encoding="utf-8")
    assert "paragraph_max_chars" in _failure("lint", project.slug, "--file", str(path))["message"]


def test_an_unusable_title_policy_is_an_error_not_a_crash(tmp_path):
    project = ProjectFactory(target_platform="jinjiang")
    Project.objects.filter(pk=project.pk).update(lint_settings={"title_policy": {"enabled": True, "max_chars": "ten"}})
    path = tmp_path / "chapter.md"
    path.write_text("# 第 1 章 雪\n\n他来了。", encoding="utf-8")
    assert "max_chars" in _failure("lint", project.slug, "--file", str(path))["message"]
