"""The facts ledger (issue #18): lasting facts of the story, stored per project, validated,
versioned with history, edited in the admin through the same services."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects.errors import InvalidData, VersionConflict
from projects.models import Membership, Role, StoryFact
from projects.services.facts import (
    story_fact_create,
    story_fact_next_id,
    story_fact_update,
    story_facts_file_issues,
)

pytestmark = pytest.mark.django_db


def _promise(project, editor=None, **overrides):
    values = {"kind": "promise", "text": "林枫答应陈老护送残卷南下", "chapter": 3,
              "characters": ["lin-feng", "chen-lao"], "storyline": "main-arc"} | overrides
    return story_fact_create(project=project, editor=editor, **values)


def test_a_fact_gets_the_next_id_and_a_history_entry_with_its_author(sample_project, make_user):
    alice = make_user("alice")
    first = _promise(sample_project, alice)
    second = _promise(sample_project, alice, kind="debt", text="赵明欠林枫一条命")
    assert (first.fact_id, second.fact_id) == ("fact-001", "fact-002")
    assert first.status == "open" and first.version == 1 and first.origin == "person"
    assert first.history.get().history_user == alice
    StoryFact.objects.filter(pk=first.pk).delete()  # the highest number in use decides, not the count
    assert story_fact_next_id(sample_project) == "fact-003"


def test_closing_a_fact_is_versioned_and_a_stale_save_is_refused(sample_project, make_user):
    alice, bob = make_user("alice"), make_user("bob")
    fact = _promise(sample_project, alice)
    closed = story_fact_update(fact=fact, editor=alice, base_version=1, status="fulfilled", closed_chapter=9,
                               closing_note="南下途中交还残卷")
    assert (closed.status, closed.closed_chapter, closed.version) == ("fulfilled", 9, 2)
    with pytest.raises(VersionConflict):
        story_fact_update(fact=fact, editor=bob, base_version=1, text="被覆盖")
    reopened = story_fact_update(fact=closed, editor=bob, base_version=2, status="open")
    assert reopened.closed_chapter is None  # reopening clears the closing chapter
    assert [h.history_user for h in reopened.history.order_by("history_date")] == [alice, alice, bob]


@pytest.mark.parametrize("values, message", [
    ({"characters": ["nobody"]}, "nobody"),
    ({"storyline": "no-such-line"}, "no-such-line"),
    ({"kind": "prophecy"}, "kind"),
    ({"text": ""}, "text"),
    ({"text": "长" * 301}, "text"),
    ({"chapter": 0}, "chapter"),
    ({"status": "fulfilled"}, "closed_chapter"),  # closed, but not said where
    ({"status": "cancelled", "closed_chapter": 2}, "closed_chapter"),  # closed before it was established
    ({"characters": "lin-feng"}, "characters"),  # a string, not a list
])
def test_bad_facts_are_refused_with_nothing_written(sample_project, values, message):
    with pytest.raises(InvalidData, match=message):
        _promise(sample_project, **values)
    assert not StoryFact.objects.exists()


def test_an_id_is_a_slug_and_unique_in_the_project(sample_project):
    _promise(sample_project, fact_id="oath-of-the-snow")
    with pytest.raises(InvalidData, match="oath-of-the-snow"):
        _promise(sample_project, fact_id="oath-of-the-snow")
    with pytest.raises(InvalidData, match="fact_id"):
        _promise(sample_project, fact_id="../etc")
    assert StoryFact.objects.count() == 1


def test_only_the_human_fields_can_be_changed(sample_project):
    fact = _promise(sample_project)
    with pytest.raises(InvalidData, match="origin"):
        story_fact_update(fact=fact, editor=None, base_version=1, origin="pipeline")


def test_the_facts_file_check_names_each_problem():
    good = {"id": "fact-001", "kind": "death", "text": "陈老死于雪夜", "chapter": 4, "status": "open"}
    assert story_facts_file_issues({"facts": [good]}) == []
    assert story_facts_file_issues({"facts": [good, good]}) == ["$.facts[1]: the id fact-001 appears twice"]
    assert "closed_chapter" in story_facts_file_issues({"facts": [good | {"status": "fulfilled"}]})[0]
    assert "before chapter" in story_facts_file_issues(
        {"facts": [good | {"status": "cancelled", "closed_chapter": 2}]})[0]
    assert story_facts_file_issues({"facts": [good | {"kind": "rumour"}]})
    assert story_facts_file_issues({"facts": [good | {"unexpected": 1}]})
    assert story_facts_file_issues([good])


# --- the admin ------------------------------------------------------------------------------------


def _admin_client(project, make_user, role=Role.EDITOR) -> Client:
    user = make_user(f"admin-{role}")
    Membership.objects.create(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def _form(fact, **changes):
    data = {"project": fact.project_id, "fact_id": fact.fact_id, "kind": fact.kind, "text": fact.text,
            "chapter": fact.chapter, "characters": '["lin-feng"]', "storyline": fact.storyline,
            "foreshadowing": "[]", "status": fact.status, "closed_chapter": "", "closing_note": "",
            "base_version": fact.version}
    return data | changes


def test_the_admin_edits_a_fact_with_a_version_check_and_the_same_rules(sample_project, make_user):
    fact = _promise(sample_project)
    client = _admin_client(sample_project, make_user)
    url = reverse("admin:projects_storyfact_change", args=[fact.pk])
    assert client.get(url).status_code == 200
    response = client.post(url, _form(fact, characters='["nobody"]'))
    assert response.status_code == 200 and "nobody" in response.content.decode().split('class="errorlist')[1]
    response = client.post(url, _form(fact, text="林枫改口：只送到渡口"))
    assert response.status_code == 302
    fact.refresh_from_db()
    assert (fact.text, fact.version, fact.characters) == ("林枫改口：只送到渡口", 2, ["lin-feng"])
    stale = client.post(url, _form(fact, base_version=1, text="旧页面的保存"))
    assert stale.status_code == 200 and "Someone else saved this" in stale.content.decode()
    fact.refresh_from_db()
    assert fact.text == "林枫改口：只送到渡口"


def test_a_viewer_cannot_change_facts_in_the_admin(sample_project, make_user):
    fact = _promise(sample_project)
    client = _admin_client(sample_project, make_user, Role.VIEWER)
    url = reverse("admin:projects_storyfact_change", args=[fact.pk])
    assert client.post(url, _form(fact, text="改")).status_code == 403
    fact.refresh_from_db()
    assert fact.text == "林枫答应陈老护送残卷南下"
