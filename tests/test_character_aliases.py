"""A character's aliases and titles (#18): edited on the web as a simple list, validated by its
schema, exported as an extra key of the character's JSON and read back; an older tree without it
imports with no aliases; the API shows them."""
from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from projects.filetree.export import tree_files
from projects.filetree.importer import tree_import
from projects.filetree.source import read_zip
from projects.models import Character
from projects.sample_project import sample_project_create
from tests.conftest import member_client
from tests.test_character_edit import post_data
from tests.test_filetree import cli_files, zip_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    return sample_project_create(owner=make_user("owner", staff=False))


def edit_url(project, slug: str = "lin-feng") -> str:
    return reverse("character-edit", args=[project.slug, slug])


def test_an_editor_types_aliases_separated_by_commas_and_lines(project, make_user):
    client = member_client(project, make_user, "editor")
    page = client.get(edit_url(project))
    assert "别名与称号" in page.content.decode()
    response = client.post(edit_url(project), post_data(page, aliases="林师兄，枫哥\n 林公子 、林师兄"))
    assert response.status_code == 302
    assert Character.objects.get(project=project, slug="lin-feng").aliases == ["林师兄", "枫哥", "林公子"]
    again = client.get(edit_url(project)).content.decode()
    assert "林师兄、枫哥、林公子" in again  # shown back as a list the person can edit


def test_an_overlong_alias_is_refused_and_nothing_is_saved(project, make_user):
    client = member_client(project, make_user, "editor")
    page = client.get(edit_url(project))
    before = Character.objects.get(project=project, slug="lin-feng")
    response = client.post(edit_url(project), post_data(page, aliases="林" * 41))
    assert response.status_code == 200
    assert "每个别名最多 40 个字" in response.content.decode()
    after = Character.objects.get(pk=before.pk)
    assert (after.aliases, after.version) == (before.aliases, before.version)


def test_the_model_refuses_aliases_that_are_not_a_list_of_names(project):
    character = Character.objects.get(project=project, slug="lin-feng")
    for bad in ("林师兄", [1, 2], [""], {"a": "b"}):
        character.aliases = bad
        with pytest.raises(ValidationError):
            character.full_clean()


def test_aliases_go_out_with_the_tree_and_come_back(project):
    Character.objects.filter(project=project, slug="lin-feng").update(aliases=["林师兄", "枫哥"])
    files = dict(tree_files(project))
    body = json.loads(files["characters/active/lin-feng.json"])
    assert body["aliases"] == ["林师兄", "枫哥"]
    plain = [path for path in files if path.startswith("characters/active/") and path.endswith(".json")
             and path != "characters/active/lin-feng.json"]
    assert plain and all("aliases" not in json.loads(files[path]) for path in plain)  # none: no key

    report = tree_import(read_zip(zip_of(files)), slug="copy")
    copy = Character.objects.get(project__slug="copy", slug="lin-feng")
    assert report is not None and copy.aliases == ["林师兄", "枫哥"]
    assert "aliases" not in copy.extra


def test_a_tree_without_aliases_imports_with_none():
    tree_import(read_zip(zip_of(cli_files())), slug="cli")
    aliases = list(Character.objects.filter(project__slug="cli").values_list("aliases", flat=True))
    assert aliases and all(a == [] for a in aliases)


def test_a_tree_with_malformed_aliases_is_refused_whole():
    files = cli_files()
    path = next(p for p in files if p.startswith("characters/") and p.endswith(".json")
                and "relationships" not in p)
    body = json.loads(files[path])
    body["aliases"] = "not a list"
    files[path] = json.dumps(body, ensure_ascii=False).encode()
    with pytest.raises(Exception) as caught:
        tree_import(read_zip(zip_of(files)), slug="bad")
    assert "aliases" in str(caught.value)
    assert not Character.objects.filter(project__slug="bad").exists()


def test_the_api_shows_aliases(project):
    Character.objects.filter(project=project, slug="lin-feng").update(aliases=["林师兄"])
    client = APIClient()
    client.force_authenticate(project.memberships.get(role="owner").user)
    detail = client.get(f"/api/projects/{project.slug}/characters/lin-feng")
    assert detail.status_code == 200, detail.content
    assert detail.json()["aliases"] == ["林师兄"]


def test_the_admin_edits_aliases_with_its_json_editor(project, make_user):
    from django.test import Client

    admin = make_user("root", superuser=True)
    client = Client()
    client.force_login(admin)
    character = Character.objects.get(project=project, slug="lin-feng")
    page = client.get(reverse("admin:projects_character_change", args=[character.pk]))
    assert page.status_code == 200
    assert 'name="aliases"' in page.content.decode()
