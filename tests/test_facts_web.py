"""The facts ledger on the web (issues #18, #16): every member reads the list (open or closed, by
character); editors and owners add and edit facts with form fields, through the same services,
version check and history as the admin; Chinese by default, English on request; bad input gets
a clear error and nothing half-written, never a 500."""
from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import StoryFact
from projects.services.facts import story_fact_create, story_fact_update
from tests.conftest import member_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger(sample_project):
    story_fact_create(project=sample_project, editor=None, kind="promise", text="林枫答应护送陈老南下", chapter=1,
                      characters=["lin-feng", "chen-lao"], storyline="main-arc")
    story_fact_create(project=sample_project, editor=None, kind="debt", text="赵明欠林枫一条命", chapter=2,
                      characters=["zhao-ming"], status="cancelled", closed_chapter=3, closing_note="一笔勾销")
    return sample_project


def _list(client, project, **params):
    return client.get(reverse("fact-list", args=[project.slug]), params)


def test_a_viewer_reads_the_open_facts_in_chinese_and_can_filter(ledger, make_user):
    client = member_client(ledger, make_user, "viewer")
    page = _list(client, ledger).content.decode()
    assert "事实账本" in page and "林枫答应护送陈老南下" in page and "承诺或誓言" in page and "仍有效" in page
    assert "赵明欠林枫一条命" not in page  # closed: not in the default list
    assert reverse("fact-new", args=[ledger.slug]) not in page  # a viewer has no edit links
    closed = _list(client, ledger, status="closed").content.decode()
    assert "赵明欠林枫一条命" in closed and "已取消" in closed and "一笔勾销" in closed
    assert "林枫答应护送陈老南下" not in closed
    by_character = _list(client, ledger, status="all", character="zhao-ming").content.decode()
    assert "赵明欠林枫一条命" in by_character and "林枫答应护送陈老南下" not in by_character


@pytest.mark.parametrize("params", [{"status": "<script>"}, {"character": "../../etc"}, {"character": "林枫"},
                                    {"status": "closed", "character": "x" * 5000}])
def test_odd_filters_show_the_default_list_never_an_error(ledger, make_user, params):
    response = _list(member_client(ledger, make_user, "viewer"), ledger, **params)
    assert response.status_code == 200 and "<script>" not in response.content.decode().split("</header>")[1]


def test_the_list_is_in_english_on_request_with_human_labels(ledger, make_user):
    client = member_client(ledger, make_user, "editor", language="en")
    page = _list(client, ledger, status="all").content.decode()
    assert "Facts ledger" in page and "promise or oath" in page and "cancelled" in page and "New fact" in page


def test_the_world_and_character_pages_link_to_the_ledger(ledger, make_user):
    client = member_client(ledger, make_user, "viewer")
    world = client.get(reverse("world", args=[ledger.slug])).content.decode()
    assert reverse("fact-list", args=[ledger.slug]) in world
    assert f'{reverse("fact-list", args=[ledger.slug])}?character=lin-feng' in world
    profile = client.get(reverse("world-character", args=[ledger.slug, "lin-feng"])).content.decode()
    assert f'{reverse("fact-list", args=[ledger.slug])}?character=lin-feng' in profile


def _form(**changes):
    return {"kind": "injury", "text": "陈老在雪原受了内伤", "chapter": "2", "characters": ["chen-lao"],
            "storyline": "main-arc", "status": "open", "closed_chapter": "", "closing_note": ""} | changes


def test_an_editor_adds_a_fact_with_form_fields_and_it_is_recorded_as_theirs(ledger, make_user):
    client = member_client(ledger, make_user, "editor")
    new = client.get(reverse("fact-new", args=[ledger.slug])).content.decode()
    assert 'type="checkbox"' in new and 'value="chen-lao"' in new and "陈老" in new  # characters as checkboxes
    response = client.post(reverse("fact-new", args=[ledger.slug]), _form(characters=["chen-lao", "lin-feng"]))
    assert response.status_code == 302
    fact = StoryFact.objects.get(project=ledger, kind="injury")
    assert (fact.fact_id, fact.characters, fact.version) == ("fact-003", ["chen-lao", "lin-feng"], 1)
    assert fact.history.get().history_user.username == "editor"


def test_an_owner_closes_a_fact_and_a_stale_form_is_refused(ledger, make_user):
    client = member_client(ledger, make_user, "owner")
    fact = StoryFact.objects.get(project=ledger, fact_id="fact-001")
    url = reverse("fact-edit", args=[ledger.slug, fact.fact_id])
    page = client.get(url).content.decode()
    assert "林枫答应护送陈老南下" in page and 'name="base_version"' in page
    closing = _form(kind="promise", text=fact.text, chapter="1", characters=["lin-feng", "chen-lao"],
                    status="fulfilled", closed_chapter="5", closing_note="送到了渡口", base_version="1")
    assert client.post(url, closing).status_code == 302
    fact.refresh_from_db()
    assert (fact.status, fact.closed_chapter, fact.closing_note, fact.version) == ("fulfilled", 5, "送到了渡口", 2)
    story_fact_update(fact=fact, editor=None, base_version=2, text="别人改过")
    stale = client.post(url, closing | {"text": "我的修改"}, follow=True).content.decode()
    assert "nothing was saved" in stale or "没有保存" in stale or "未保存" in stale
    fact.refresh_from_db()
    assert fact.text == "别人改过"
    history = client.get(url).content.decode()
    assert 'id="fact-history"' in history and "owner" in history


@pytest.mark.parametrize("changes, field_error", [
    ({"status": "fulfilled"}, "请写明这条事实在第几章兑现或取消"),
    ({"status": "cancelled", "closed_chapter": "1"}, "closed_chapter"),  # before it was established
    ({"characters": ["nobody"]}, "nobody"),
    ({"kind": "rumour"}, "rumour"),
    ({"storyline": "no-line"}, "no-line"),
    ({"text": ""}, "text"),
    ({"text": "长" * 301}, "300"),
    ({"chapter": "²"}, "chapter"),
    ({"chapter": "0"}, "chapter"),
    ({"closed_chapter": "99999999999999999999", "status": "fulfilled"}, "closed_chapter"),
])
def test_bad_input_is_refused_with_a_message_and_nothing_written(ledger, make_user, changes, field_error):
    client = member_client(ledger, make_user, "editor")
    response = client.post(reverse("fact-new", args=[ledger.slug]), _form(**changes))
    assert response.status_code == 200 and 'class="errorlist' in response.content.decode()
    assert StoryFact.objects.filter(project=ledger).count() == 2


@pytest.mark.parametrize("role, status", [("viewer", 403), ("reviewer", 403)])
def test_roles_without_edit_rights_cannot_open_or_post_the_forms(ledger, make_user, role, status):
    client = member_client(ledger, make_user, role)
    assert client.get(reverse("fact-new", args=[ledger.slug])).status_code == status
    url = reverse("fact-edit", args=[ledger.slug, "fact-001"])
    assert client.post(url, _form(base_version="1")).status_code == status
    assert StoryFact.objects.get(project=ledger, fact_id="fact-001").version == 1


def test_strangers_and_missing_facts_get_a_404(ledger, make_user, client):
    stranger = make_user("stranger", staff=False)
    client.force_login(stranger)
    assert _list(client, ledger).status_code == 404
    editor = member_client(ledger, make_user, "editor")
    assert editor.get(reverse("fact-edit", args=[ledger.slug, "fact-999"])).status_code == 404
    assert editor.get(f"/p/{ledger.slug}/edit/facts/%E6%9E%97/").status_code == 404


# --- the API: read-only, like the other story objects ---------------------------------------------


def test_the_api_lists_facts_by_status_for_members(ledger, make_user):
    client = member_client(ledger, make_user, "viewer")
    url = f"/api/projects/{ledger.slug}/facts"
    assert [f["id"] for f in client.get(url).json()["results"]] == ["fact-001"]
    closed = client.get(url, {"status": "closed"}).json()["results"]
    assert [(f["id"], f["status"], f["closed_chapter"]) for f in closed] == [("fact-002", "cancelled", 3)]
    assert len(client.get(url, {"status": "all"}).json()["results"]) == 2
    bad = client.get(url, {"status": "<script>"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid"
