"""Inviting members (#16): the role is always chosen (viewer by default on the form), an existing
account is found by user name or e-mail, an owner creates an account for someone new and gets a
one-time link (Django's password-reset token: expires, works once) or, where e-mail is configured,
the link is e-mailed. The web form and the API follow the same rules, and only owners learn
whether an account exists."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import mail
from django.test import Client
from django.urls import reverse

from projects.models import Membership

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]
NEW_PASSWORD = "Lantern-Noodles-42"


@pytest.fixture
def link_only(settings):
    settings.NOVELSITE_EMAIL_CONFIGURED = False


@pytest.fixture
def email_on(settings):
    settings.NOVELSITE_EMAIL_CONFIGURED = True


def web(world, who: str, lang: str = "zh-hans") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(world.users[who])
    return client


def members_url(world) -> str:
    return reverse("members", args=[world.project.slug])


def link_in(text: str) -> str:
    match = re.search(r"https?://[^\s\"<]+/welcome/[^\s\"<]+/", text)
    assert match, text[:3000]
    return match[0]


def choose_password(link: str) -> Client:
    """Follow a one-time link as the new person would (no session) and set a password."""
    person = Client()
    response = person.get(link)
    assert response.status_code == 302  # Django moves the token into the session first
    form_url = response["Location"]
    assert "choose a password" in person.get(form_url, HTTP_ACCEPT_LANGUAGE="en").content.decode().lower()
    response = person.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("password-set-done")
    return person


def page_text(content: bytes) -> str:
    """A page without its CSRF token, which is masked afresh in every response."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", content.decode())


def link_is_dead(link: str) -> bool:
    person = Client(HTTP_ACCEPT_LANGUAGE="en")
    response = person.get(link, follow=True)
    return "This link no longer works" in response.content.decode()


# --- the web form ------------------------------------------------------------------------------


def test_the_invite_form_starts_at_viewer_and_names_both_ways(world):
    body = web(world, "owner", "en").get(members_url(world)).content.decode()
    assert re.search(r'<select name="role"[^>]*>.*?<option value="viewer" selected>', body, re.S)
    assert re.search(r'<select name="new-role"[^>]*>.*?<option value="viewer" selected>', body, re.S)
    assert "User name or e-mail" in body and "Create an account for someone new" in body


def test_invite_an_existing_account_by_email_with_the_chosen_role(world, make_user):
    ann = make_user("ann", staff=False)
    ann.email = "Ann@Example.com"
    ann.save()
    response = web(world, "owner").post(members_url(world), {"action": "invite", "username": "ann@example.COM",
                                                             "role": "editor"}, follow=True)
    assert world.project.memberships.get(user=ann).role == "editor"
    assert "ann 现在是编辑" in response.content.decode()


def test_an_unknown_account_is_a_form_error_in_both_languages(world):
    for lang, message in (("zh-hans", "没有哪个账号使用这个用户名或邮箱。"),
                          ("en", "No account has this user name or e-mail.")):
        response = web(world, "owner", lang).post(members_url(world), {"action": "invite", "username": "nobody@x.org",
                                                                        "role": "viewer"})
        assert response.status_code == 200 and message in response.content.decode()
    assert world.project.memberships.count() == 4


def test_an_owner_creates_an_account_and_the_one_time_link_works_once(world, link_only):
    response = web(world, "owner").post(members_url(world), {
        "action": "create", "new-username": "laoban", "new-email": "laoban@example.com", "new-role": "reviewer"})
    body = response.content.decode()
    assert response.status_code == 200 and "账号 laoban 已创建，角色：审阅者。" in body
    link = link_in(body)
    user = get_user_model().objects.get(username="laoban")
    assert not user.has_usable_password() and user.email == "laoban@example.com"
    assert world.project.memberships.get(user=user).role == "reviewer"
    assert mail.outbox == []

    choose_password(link)
    assert Client().login(username="laoban", password=NEW_PASSWORD)
    assert link_is_dead(link)  # single use: the token hashed the old (unusable) password
    # the link is shown on that response only
    assert "/welcome/" not in web(world, "owner").get(members_url(world)).content.decode()


def test_an_expired_link_does_not_work(world, link_only, monkeypatch, settings):
    body = web(world, "owner").post(members_url(world), {
        "action": "create", "new-username": "late", "new-email": "late@example.com", "new-role": "viewer"}).content
    link = link_in(body.decode())
    later = PasswordResetTokenGenerator()._now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 60)
    monkeypatch.setattr(PasswordResetTokenGenerator, "_now", lambda self: later)
    assert link_is_dead(link)
    assert not get_user_model().objects.get(username="late").has_usable_password()


def test_with_email_configured_the_link_is_sent_not_shown(world, email_on):
    response = web(world, "owner", "en").post(members_url(world), {
        "action": "create", "new-username": "mian", "new-email": "mian@example.com", "new-role": "editor"},
        follow=True)
    body = response.content.decode()
    assert "the invitation was sent to mian@example.com" in body and "/welcome/" not in body
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["mian@example.com"] and world.project.title in message.subject
    assert "owner" in message.body and "Editor" in message.body
    choose_password(link_in(message.body))
    assert Client().login(username="mian", password=NEW_PASSWORD)


def test_a_failed_email_falls_back_to_the_link(world, email_on, monkeypatch):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("mail server refused")
    monkeypatch.setattr("projects.services.invitations.send_mail", refuse)
    body = web(world, "owner", "en").post(members_url(world), {
        "action": "create", "new-username": "bowl", "new-email": "bowl@example.com", "new-role": "viewer"}
    ).content.decode()
    assert "could not be sent" in body and "mail server refused" in body
    choose_password(link_in(body))


@pytest.mark.parametrize("username, email, field_error", [
    ("Viewer", "fresh@example.com", "An account with this user name already exists"),  # case-insensitive
    ("fresh", "owner@example.com", "An account with this e-mail already exists"),
    ("has space<script>", "fresh@example.com", "Enter a valid username"),
    ("fresh", "not-an-email", "Enter a valid email address"),
])
def test_duplicates_and_bad_names_are_refused_and_nothing_is_created(world, link_only, username, email,
                                                                     field_error):
    owner = world.users["owner"]
    owner.email = "owner@example.com"
    owner.save()
    before = get_user_model().objects.count()
    response = web(world, "owner", "en").post(members_url(world), {
        "action": "create", "new-username": username, "new-email": email, "new-role": "viewer"})
    body = response.content.decode()
    assert response.status_code == 200 and field_error in body and "/welcome/" not in body
    assert get_user_model().objects.count() == before


def test_a_role_that_is_not_one_is_refused(world):
    response = web(world, "owner", "en").post(members_url(world), {"action": "invite", "username": "outsider",
                                                                   "role": "superuser"})
    assert response.status_code == 200 and not world.project.memberships.filter(user=world.users["outsider"]).exists()


@pytest.mark.parametrize("who, status", [("editor", 403), ("reviewer", 403), ("viewer", 403), ("outsider", 404)])
def test_nobody_but_an_owner_learns_whether_an_account_exists(world, link_only, who, status):
    client = web(world, who)
    answers = []
    for data in ({"action": "invite", "username": "outsider", "role": "owner"},
                 {"action": "invite", "username": "nobody-at-all", "role": "owner"},
                 {"action": "create", "new-username": "outsider", "new-email": "a@b.org", "new-role": "owner"},
                 {"action": "create", "new-username": "brand-new", "new-email": "c@d.org", "new-role": "owner"}):
        response = client.post(members_url(world), data)
        answers.append((response.status_code, page_text(response.content)))
    assert {code for code, _ in answers} == {status}
    assert len({content for _, content in answers}) == 1  # the same page whatever was asked
    assert not get_user_model().objects.filter(username="brand-new").exists()
    assert Membership.objects.filter(project=world.project, role="owner").count() == 1


# --- the API -----------------------------------------------------------------------------------


def api_members(world) -> str:
    return f"/api/projects/{world.project.slug}/members"


def api_new_members(world) -> str:
    return f"/api/projects/{world.project.slug}/new-members"


def test_api_invites_by_email_and_needs_a_role(world):
    outsider = world.users["outsider"]
    outsider.email = "out@example.com"
    outsider.save()
    owner = world.client("owner")
    response = owner.post(api_members(world), {"email": "OUT@example.com"}, format="json")
    assert response.status_code == 400 and "role" in response.json()["extra"]["fields"]
    response = owner.post(api_members(world), {"email": "out@example.com", "role": "viewer"}, format="json")
    assert response.status_code == 201 and response.json()["username"] == "outsider"
    both = owner.post(api_members(world), {"email": "out@example.com", "username": "outsider", "role": "viewer"},
                      format="json")
    assert both.status_code == 400
    unknown = owner.post(api_members(world), {"email": "ghost@example.com", "role": "viewer"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["code"] == "invalid"
    assert "username" in unknown.json()["extra"]["fields"]


def test_api_creates_an_account_with_a_one_time_link(world, link_only):
    owner = world.client("owner")
    response = owner.post(api_new_members(world), {"username": "chef", "email": "chef@example.com",
                                                   "role": "editor"}, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["invitation"], data["role"], data["email_error"]) == ("link", "editor", "")
    assert data["password_link"].startswith("http://testserver/welcome/")
    assert world.project.memberships.get(user__username="chef").role == "editor"
    choose_password(data["password_link"])
    assert link_is_dead(data["password_link"])
    again = owner.post(api_new_members(world), {"username": "CHEF", "email": "x@example.com", "role": "viewer"},
                       format="json")
    assert again.status_code == 400 and "username" in again.json()["extra"]["fields"]
    no_role = owner.post(api_new_members(world), {"username": "cook", "email": "cook@example.com"}, format="json")
    assert no_role.status_code == 400


def test_api_emails_the_link_where_email_is_configured(world, email_on):
    response = world.client("owner").post(api_new_members(world), {"username": "tang", "email": "tang@example.com",
                                                                    "role": "viewer"}, format="json")
    assert response.status_code == 201
    assert (response.json()["invitation"], response.json()["password_link"]) == ("emailed", None)
    assert [m.to for m in mail.outbox] == [["tang@example.com"]]
    choose_password(link_in(mail.outbox[0].body))


@pytest.mark.parametrize("who, status", [("editor", 403), ("viewer", 403), ("outsider", 404), ("anonymous", 401)])
def test_api_non_owners_learn_nothing(world, link_only, who, status):
    client = world.client(who)
    answers = [client.post(api_members(world), {"username": name, "role": "owner"}, format="json")
               for name in ("outsider", "nobody-at-all")]
    answers += [client.post(api_new_members(world), {"username": name, "email": f"{name}@x.org", "role": "owner"},
                            format="json") for name in ("outsider", "brand-new")]
    assert {r.status_code for r in answers} == {status}
    assert len({r.content for r in answers}) == 1
    assert not get_user_model().objects.filter(username="brand-new").exists()
