"""World documents, world rules, storylines and volume outlines edited on the web: lists of words
one per line (never JSON), keys fixed once created, the version check and history of every edit,
and readers kept out."""
from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import Storyline, Volume, WorldDoc, WorldRule
from projects.sample_project import sample_project_create
from tests.conftest import member_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    return sample_project_create(owner=make_user("owner", staff=False))


def member(project, make_user, role: str = "editor"):
    return member_client(project, make_user, role, language="en")  # the messages are checked in English


def page_data(response, **changes) -> dict:
    data = {}
    for bound in response.context["form"]:
        if bound.field.disabled:
            continue
        value = bound.field.prepare_value(bound.value())
        data[bound.html_name] = "" if value is None else value
    if response.context.get("base_version") is not None:
        data["base_version"] = response.context["base_version"]
    data.update(changes)
    return data


def test_a_world_rule_with_keywords_one_per_line(project, make_user):
    client = member(project, make_user)
    rule = WorldRule.objects.get(project=project, rule_id="W-001")
    url = reverse("story-edit", args=[project.slug, "rules", "W-001"])
    page = client.get(url)
    response = client.post(url, page_data(page, rule="修炼者每日吸纳星火不得超过三次", keywords="星火\n吸纳\n\n",
                                          exceptions="濒死之时"))
    assert response.status_code == 302 and response.url.endswith("#rules")
    after = WorldRule.objects.get(pk=rule.pk)
    assert (after.rule, after.keywords, after.exceptions, after.version) == (
        "修炼者每日吸纳星火不得超过三次", ["星火", "吸纳"], ["濒死之时"], rule.version + 1)
    assert after.rule_id == "W-001"


def test_a_new_world_document_and_a_taken_name(project, make_user):
    client = member(project, make_user)
    url = reverse("story-new", args=[project.slug, "docs"])
    assert client.post(url, {"name": "ferries", "content": "# 渡口\n\n七个渡口。"}).status_code == 302
    assert WorldDoc.objects.get(project=project, name="ferries").version == 1
    again = client.post(url, {"name": "ferries", "content": "另一份"})
    assert again.status_code == 200 and again.context["form"].errors
    assert WorldDoc.objects.get(project=project, name="ferries").content.startswith("# 渡口")


def test_a_storyline_memory_over_500_characters_is_refused(project, make_user):
    client = member(project, make_user)
    url = reverse("story-edit", args=[project.slug, "storylines", "main-arc"])
    page = client.get(url)
    too_long = client.post(url, page_data(page, memory="忆" * 501))
    assert too_long.status_code == 200 and "memory" in too_long.context["form"].errors
    ok = client.post(url, page_data(page, memory="林枫已知密信出自星火宗。", pov_characters="lin-feng\nchen-lao"))
    assert ok.status_code == 302
    line = Storyline.objects.get(project=project, slug="main-arc")
    assert (line.memory, line.pov_characters) == ("林枫已知密信出自星火宗。", ["lin-feng", "chen-lao"])


def test_a_volume_outline_and_a_stale_save(project, make_user):
    client = member(project, make_user)
    url = reverse("story-edit", args=[project.slug, "volumes", "1"])
    page = client.get(url)
    outline = Volume.objects.get(project=project, number=1).outline + "\n\n### 第 4 章: 渡口\n- **Conflict**: 追兵\n"
    first = client.post(url, page_data(page, outline=outline))
    assert first.status_code == 302 and first.url.endswith("?volume=1")
    stale = client.post(url, page_data(page, title="另一个标题"), follow=True)
    assert "nothing was saved" in stale.content.decode()
    volume = Volume.objects.get(project=project, number=1)
    assert volume.outline.endswith("- **Conflict**: 追兵\n") and volume.title != "另一个标题"


def test_imported_exceptions_that_are_not_words_are_kept(project, make_user):
    WorldRule.objects.filter(project=project, rule_id="W-001").update(exceptions=[{"when": "濒死"}])
    client = member(project, make_user)
    url = reverse("story-edit", args=[project.slug, "rules", "W-001"])
    page = client.get(url)
    assert page.context["form"].fields["exceptions"].disabled
    assert client.post(url, page_data(page, category="修炼")).status_code == 302
    assert WorldRule.objects.get(project=project, rule_id="W-001").exceptions == [{"when": "濒死"}]


@pytest.mark.parametrize("kind", ["docs", "rules", "storylines", "volumes"])
def test_readers_cannot_edit_and_unknown_things_are_not_found(project, make_user, kind):
    viewer = member(project, make_user, "viewer")
    assert viewer.get(reverse("story-new", args=[project.slug, kind])).status_code == 403
    editor = member(project, make_user, "editor")
    assert editor.get(reverse("story-edit", args=[project.slug, kind, "no-such-thing"])).status_code == 404
    assert editor.get(reverse("story-new", args=[project.slug, "chapters"])).status_code == 404


def test_the_pages_link_to_the_editors(project, make_user):
    client = member(project, make_user)
    world = client.get(reverse("world", args=[project.slug])).content.decode()
    for kind, key in (("rules", "W-001"), ("storylines", "main-arc")):
        assert reverse("story-edit", args=[project.slug, kind, key]) in world
    chapters = client.get(reverse("chapter-list", args=[project.slug])).content.decode()
    assert reverse("story-edit", args=[project.slug, "volumes", "1"]) in chapters
