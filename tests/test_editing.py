"""Human edits: a save that started from an older version is refused, every accepted save is in the
history with its author, and project membership keeps an owner."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from projects.errors import InvalidData, VersionConflict
from projects.models import Chapter, Membership, Role
from projects.permissions import Action, role_allows
from projects.selectors import project_get_for_member, projects_for_user
from projects.services.editing import chapter_update, story_object_update
from projects.services.projects import membership_set_role
from tests.factories import ChapterFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def test_saving_over_a_newer_version_is_refused(sample_project, make_user):
    alice, bob = make_user("alice"), make_user("bob")
    doc = sample_project.world_docs.get(name="geography")
    opened_at = doc.version
    story_object_update(obj=doc, editor=alice, base_version=opened_at, content="阿丽丝的版本")
    with pytest.raises(VersionConflict) as caught:
        story_object_update(obj=doc, editor=bob, base_version=opened_at, content="鲍勃的版本")
    assert caught.value.http_status == 409
    assert caught.value.extra == {"current_version": opened_at + 1, "base_version": opened_at}
    doc.refresh_from_db()
    assert doc.content == "阿丽丝的版本" and doc.version == opened_at + 1


def test_each_save_is_recorded_with_its_author(sample_project, make_user):
    alice = make_user("alice")
    character = sample_project.characters.get(slug="zhao-ming")
    story_object_update(obj=character, editor=alice, base_version=1, display_name="赵明远")
    latest, first = character.history.all()[:2]
    assert latest.history_user == alice and latest.display_name == "赵明远" and latest.version == 2
    delta = latest.diff_against(first)
    assert [(c.field, c.old, c.new) for c in delta.changes if c.field == "display_name"] == [
        ("display_name", "赵明", "赵明远")
    ]


def test_chapter_update_counts_words_and_bumps_version(make_user):
    chapter = ChapterFactory(text="旧文")
    saved = chapter_update(chapter=chapter, editor=make_user("e"), text="林枫 走进 雪原。", base_version=1)
    assert saved.version == 2
    assert Chapter.objects.get(pk=chapter.pk).word_count == 7  # characters, whitespace not counted


def test_outline_and_contract_edits_are_versioned_too(sample_project, make_user):
    editor = make_user("e")
    volume = sample_project.volumes.get(number=1)
    contract = sample_project.chapter_contracts.get(chapter=1)
    story_object_update(obj=volume, editor=editor, base_version=1, outline=volume.outline + "\n")
    story_object_update(obj=contract, editor=editor, base_version=1,
                        data={**contract.data, "excitement_type": "reveal"})
    with pytest.raises(VersionConflict):
        story_object_update(obj=volume, editor=editor, base_version=1, outline="旧")
    with pytest.raises(VersionConflict):
        story_object_update(obj=contract, editor=editor, base_version=1, data=contract.data)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_editors_saving_at_once_one_wins_one_is_told(make_user):
    chapter = ChapterFactory(text="原文")
    barrier = threading.Barrier(2)
    results: list[str] = []

    def save(text: str) -> None:
        try:
            barrier.wait()
            chapter_update(chapter=chapter, editor=None, text=text, base_version=1)
            results.append("saved")
        except VersionConflict:
            results.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(t,)) for t in ("甲", "乙")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["conflict", "saved"]
    assert Chapter.objects.get(pk=chapter.pk).version == 2


# --- membership and roles ------------------------------------------------------------------------


def test_role_table():
    table = {role: {a.value for a in Action if role_allows(role, a)} for role in Role.values}
    assert table == {
        "owner": {"read", "decide", "edit", "manage"},
        "editor": {"read", "decide", "edit"},
        "reviewer": {"read", "decide"},
        "viewer": {"read"},
    }
    assert not role_allows(None, Action.READ)


def test_last_owner_cannot_be_demoted(make_user):
    owner = make_user("owner")
    project = ProjectFactory()
    membership_set_role(project=project, user=owner, role="owner")
    with pytest.raises(InvalidData, match="last owner"):
        membership_set_role(project=project, user=owner, role="viewer")
    second = make_user("second")
    membership_set_role(project=project, user=second, role="owner")
    membership_set_role(project=project, user=owner, role="viewer")
    assert Membership.objects.get(project=project, user=owner).role == "viewer"


def test_unknown_role_is_refused(make_user):
    with pytest.raises(InvalidData, match="unknown role"):
        membership_set_role(project=ProjectFactory(), user=make_user("u"), role="admin")


def test_non_members_get_not_found_never_a_hint(make_user):
    from projects.errors import NotFound, PermissionDenied

    project = ProjectFactory(slug="secret")
    viewer, stranger = make_user("viewer"), make_user("stranger")
    membership_set_role(project=project, user=viewer, role="viewer")
    with pytest.raises(NotFound) as missing:
        project_get_for_member(user=stranger, slug="secret")
    with pytest.raises(NotFound) as really_missing:
        project_get_for_member(user=stranger, slug="no-such-project")
    assert missing.value.message == really_missing.value.message
    assert project_get_for_member(user=viewer, slug="secret") == project
    with pytest.raises(PermissionDenied):
        project_get_for_member(user=viewer, slug="secret", action=Action.EDIT)
    assert list(projects_for_user(user=viewer)) == [project]
    assert list(projects_for_user(user=viewer, action=Action.EDIT)) == []
    assert list(projects_for_user(user=stranger)) == []
