"""Sign-in throttling (#15 item 6): wrong passwords lock the account, and many from one address lock
the address, on the web login and the admin's; a right password does not get through a lock; the
message says how long to wait, in Chinese by default and in English on request; a successful
sign-in clears its account's counter."""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

pytestmark = pytest.mark.django_db

LOGIN_PAGES = {"web": "/login/", "admin": "/admin/login/"}


@pytest.fixture(autouse=True)
def _fresh_counters(settings):
    settings.NOVELSITE_LOGIN_MAX_FAILURES_PER_ACCOUNT = 5
    settings.NOVELSITE_LOGIN_MAX_FAILURES_PER_ADDRESS = 20
    settings.NOVELSITE_LOGIN_LOCKOUT_SECONDS = 900
    cache.clear()
    yield
    cache.clear()


def _login(client: Client, page: str, username: str, password: str, *, address: str = "203.0.113.7",
           language: str = "zh-hans"):
    return client.post(LOGIN_PAGES[page], {"username": username, "password": password},
                       REMOTE_ADDR=address, HTTP_ACCEPT_LANGUAGE=language)


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("page", ["web", "admin"])
def test_thirty_wrong_passwords_then_the_right_one_is_refused_with_a_clear_message(make_user, page):
    make_user("alice")  # staff, so the admin would let her in
    client = Client()
    for _ in range(30):
        assert _login(client, page, "alice", "wrong").status_code == 200
    response = _login(client, page, "alice", "pw-alice")
    assert response.status_code == 200 and not _signed_in(client)
    assert "登录失败次数过多" in response.content.decode() and "15 分钟" in response.content.decode()
    english = _login(client, page, "alice", "pw-alice", language="en")
    assert "Too many failed sign-in attempts. Please wait 15 minutes" in english.content.decode()
    assert not _signed_in(client)


def test_the_lock_is_per_account_whatever_the_address_and_ends(make_user, monkeypatch):
    make_user("alice")
    for n in range(5):
        _login(Client(), "web", "alice", "wrong", address=f"198.51.100.{n}")
    assert not _signed_in(client := Client()) and _login(client, "web", "ALICE ", "pw-alice").status_code == 200
    assert not _signed_in(client)  # the user name's case and spaces do not make a new account to guess
    bob = make_user("bob")
    assert bob and _login(client, "web", "bob", "pw-bob").status_code == 302  # other accounts are fine

    import time as real_time
    later = real_time.time() + 901
    monkeypatch.setattr("novelsite.login_throttle.time.time", lambda: later)
    client = Client()
    assert _login(client, "web", "alice", "pw-alice").status_code == 302 and _signed_in(client)


def test_many_failures_from_one_address_lock_that_address(make_user):
    make_user("carol")
    for n in range(20):  # a different account each time: no account reaches its own limit
        _login(Client(), "web", f"guess-{n}", "wrong", address="192.0.2.1")
    locked = Client()
    response = _login(locked, "web", "carol", "pw-carol", address="192.0.2.1")
    assert "登录失败次数过多" in response.content.decode() and not _signed_in(locked)
    elsewhere = Client()
    assert _login(elsewhere, "web", "carol", "pw-carol", address="192.0.2.2").status_code == 302


def test_a_successful_sign_in_clears_the_accounts_counter(make_user):
    make_user("dave")
    for _round in range(3):  # 4 failures, then success: never reaches 5 in a row
        for _ in range(4):
            _login(Client(), "web", "dave", "wrong", address="192.0.2.9")
        client = Client()
        assert _login(client, "web", "dave", "pw-dave", address="192.0.2.10").status_code == 302
        assert _signed_in(client)


def test_a_wrong_password_below_the_limit_keeps_the_usual_message(make_user):
    make_user("erin")
    response = _login(Client(), "web", "erin", "wrong", language="en")
    assert "didn&#x27;t match" in response.content.decode() or "didn't match" in response.content.decode()
    assert "Too many" not in response.content.decode()


def test_behind_the_stacks_proxy_each_client_is_counted_by_its_own_address(make_user, settings):
    """Behind nginx every request comes from nginx's address; with NOVELSITE_PROXY_HOPS=1 the
    throttle counts the address nginx appended, so one guesser does not lock everyone out, and
    what a client writes into X-Forwarded-For itself does not help it."""
    settings.NOVELSITE_PROXY_HOPS = 1
    make_user("carol")
    nginx = "172.18.0.5"
    for n in range(20):  # the guesser forges a new address each time, to the left of nginx's entry
        Client().post("/login/", {"username": f"guess-{n}", "password": "wrong"}, REMOTE_ADDR=nginx,
                      HTTP_X_FORWARDED_FOR=f"10.9.9.{n}, 198.51.100.66")
    guesser = Client()
    response = guesser.post("/login/", {"username": "carol", "password": "pw-carol"}, REMOTE_ADDR=nginx,
                            HTTP_X_FORWARDED_FOR="10.1.1.1, 198.51.100.66", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "登录失败次数过多" in response.content.decode() and not _signed_in(guesser)
    someone_else = Client()
    response = someone_else.post("/login/", {"username": "carol", "password": "pw-carol"}, REMOTE_ADDR=nginx,
                                 HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert response.status_code == 302 and _signed_in(someone_else)


@pytest.mark.parametrize(("hops", "forwarded", "expected"), [
    (0, "198.51.100.7", "192.0.2.9"),  # no proxy trusted: the header is ignored
    (1, "198.51.100.7", "198.51.100.7"),
    (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # a forged entry stays on the left
    (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),  # TLS proxy, then nginx
    (2, "198.51.100.7", "192.0.2.9"),  # fewer entries than proxies: it did not come through them
    (1, "", "192.0.2.9"),
    (1, " , ", "192.0.2.9"),
])
def test_the_client_address_is_counted_from_the_right(settings, rf, hops, forwarded, expected):
    from novelsite.login_throttle import client_address

    settings.NOVELSITE_PROXY_HOPS = hops
    request = rf.get("/", REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected
