"""The role × action matrix of the web pages, derived from the URL resolver as the API's
(test_api_permissions.py) is derived from the OpenAPI schema: every URL pattern is either a row of
``PAGES`` or named in ``SKIPPED`` with the reason, so a new page cannot ship untested.

Each row says, for GET and for POST, what the page needs and what a caller who has it gets. From
that the matrix follows for every caller: anonymous people are sent to log in, a signed-in
non-member gets the 404 of a project that does not exist, a member whose role does not allow the
action gets 403, and a method the page does not take is a 405. POST bodies are empty or invalid on
purpose: an allowed role gets the form again with its errors, or is sent back with the reason, so
the matrix tests who may ask, not what the asking does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from projects.permissions import Action, role_allows

# Least privilege first: the report of a failing row reads from the most to the least surprising.
CALLERS = ("anonymous", "outsider", "viewer", "reviewer", "editor", "owner")
SIGNED_IN = "signed in"  # any account, member of a project or not
ANYONE = "anyone"  # no account needed (logging in, the one-time link of a new member)
LOGIN = "login"  # 302 to the login page, with ?next= back here

READ, DECIDE, EDIT, MANAGE = Action.READ, Action.DECIDE, Action.EDIT, Action.MANAGE


@dataclass(frozen=True)
class Page:
    """One URL pattern (by name) with one set of URL arguments. ``get`` and ``post`` are (what the
    caller needs, status when the caller has it); None means the page refuses that method (405).
    ``kwargs`` beyond the defaults (``slug``, chapter and volume numbers), with ``ID_*`` values
    standing for rows of the world; ``data`` is the POST body."""

    name: str
    get: tuple[Action | str, int] | None = None
    post: tuple[Action | str, int] | None = None
    kwargs: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        args = ",".join(str(v) for v in self.kwargs.values())
        return f"{self.name}({args})" if args else self.name


PAGES = [
    # --- no project: logging in, the new member's one-time link, the list and creation of projects
    Page("login", get=(ANYONE, 200), post=(ANYONE, 200)),  # empty form: shown again with errors
    Page("logout", post=(ANYONE, 302)),  # Django's LogoutView takes POST only
    # an unknown link: the page that says the link is invalid (the real token is test_member_invitations')
    Page("password-set", get=(ANYONE, 200), post=(ANYONE, 200), kwargs={"uidb64": "MQ", "token": "no-such-token"}),
    Page("password-set-done", get=(ANYONE, 200)),
    Page("projects-home", get=(SIGNED_IN, 200)),  # each sees their own projects (test below)
    Page("project-create-web", get=(SIGNED_IN, 200), post=(SIGNED_IN, 200)),  # empty form: errors
    Page("slug-suggestion", get=(SIGNED_IN, 200)),
    Page("project-import-web", post=(SIGNED_IN, 200)),  # no archive: the form again with errors
    # --- the dashboard and its buttons (pipeline/web/urls.py)
    Page("dashboard", get=(READ, 200)),
    Page("progress", get=(READ, 200)),
    Page("advance", post=(EDIT, 302)),  # back to the dashboard (started, or refused with the reason)
    Page("write", post=(EDIT, 302)),  # refused while the plan waits: back to the dashboard
    Page("pause", post=(EDIT, 302)),
    Page("retry", post=(EDIT, 302)),  # nothing to retry: back to the dashboard with the reason
    Page("chapter-rewrite", post=(EDIT, 302)),  # refused while the plan waits: back to the dashboard
    # --- gates and the volume plan waiting for approval
    Page("gates", get=(READ, 200)),
    Page("gate-answer-web", post=(DECIDE, 302), kwargs={"question_id": "ID_QUESTION"}),  # invalid: back to gates
    Page("plan", get=(READ, 200)),
    Page("plan-decide", post=(DECIDE, 302)),  # no decision given: regenerate
    Page("plan-edit", post=(EDIT, 302)),  # the empty outline is refused: back to the plan
    Page("trial", get=(READ, 200)),
    # --- runs and promotion posts
    Page("runs", get=(READ, 200)),
    Page("run", get=(READ, 200), kwargs={"run_id": "ID_RUN"}),
    Page("promotions", get=(READ, 200), post=(EDIT, 200)),  # no target: refused, the list with the reason
    Page("promotion", get=(READ, 200), kwargs={"run_id": "ID_PROMOTION"}),
    Page("promotion-regenerate", post=(EDIT, 302), kwargs={"run_id": "ID_PROMOTION"}),  # no step: refused
    # --- reading the book
    Page("chapter-list", get=(READ, 200)),
    Page("chapter-read", get=(READ, 200)),
    Page("chapter-history", get=(READ, 200)),
    Page("world", get=(READ, 200)),
    Page("world-doc", get=(READ, 200), kwargs={"key": "geography"}),
    Page("world-character", get=(READ, 200), kwargs={"key": "lin-feng"}),
    Page("state", get=(READ, 200)),
    Page("fact-list", get=(READ, 200)),
    Page("contract-list", get=(READ, 200)),
    Page("download", get=(READ, 200), kwargs={"kind": "zip"}),
    Page("download", get=(READ, 200), kwargs={"kind": "txt"}),
    Page("download", get=(READ, 200), kwargs={"kind": "epub"}),
    # --- editing the story (an empty form comes back with its errors: 200)
    Page("chapter-edit", get=(EDIT, 200), post=(EDIT, 200)),
    Page("character-new", get=(EDIT, 200), post=(EDIT, 200)),
    Page("character-edit", get=(EDIT, 200), post=(EDIT, 200), kwargs={"character_slug": "lin-feng"}),
    Page("relationships-edit", get=(EDIT, 200), post=(EDIT, 200)),
    Page("foreshadowing-new", get=(EDIT, 200), post=(EDIT, 200)),
    Page("foreshadowing-edit", get=(EDIT, 200), post=(EDIT, 200), kwargs={"fid": "F-001"}),
    Page("schedule-edit", get=(EDIT, 200), post=(EDIT, 200)),
    Page("fact-new", get=(EDIT, 200), post=(EDIT, 200)),
    Page("fact-edit", get=(EDIT, 200), post=(EDIT, 200), kwargs={"fact_id": "fact-001"}),
    Page("contract-edit", get=(EDIT, 200), post=(EDIT, 200)),
    *[Page("story-new", get=(EDIT, 200), post=(EDIT, 200), kwargs={"kind": kind})
      for kind in ("docs", "rules", "storylines", "volumes")],
    *[Page("story-edit", get=(EDIT, 200), post=(EDIT, 200), kwargs={"kind": kind, "key": key})
      for kind, key in (("docs", "geography"), ("rules", "W-001"), ("storylines", "main-arc"), ("volumes", "1"))],
    # --- the project's people and settings
    Page("members", get=(READ, 200), post=(MANAGE, 200)),  # every member sees who else is in; empty form: errors
    Page("settings", get=(MANAGE, 200), post=(MANAGE, 200)),
    Page("settings-platform", get=(MANAGE, 302), post=(MANAGE, 200)),  # GET: to the settings page, which shows it
    Page("settings-voice", get=(EDIT, 200), post=(EDIT, 200)),  # no sample given: the form again with errors
]

# Patterns without a row, and why. A prefix skips everything under it.
SKIPPED_PREFIXES = {
    # every admin page checks is_staff and the model permissions: test_admin_authorization.py
    "admin/": "the admin's own checks, tested in test_admin_authorization.py",
    # the API answers 401/403/404 in JSON; its matrix comes from the OpenAPI schema. The schema and
    # its Swagger page (api-schema, api-docs) describe the API, no project data: test_api_security.py
    "api/": "the REST API, tested in test_api_permissions.py from the schema",
}
SKIPPED = {
    "healthz": "the load balancer's probe: no page, public by design (test_runtime.py)",
    "favicon.ico": "a redirect to a static file for anyone: no page (unnamed, so known by its route)",
    "set_language": "Django's language switch: a POST that sets a cookie and redirects, for anyone (test_web_pages.py)",
}


def url_patterns(resolver: URLResolver | None = None, prefix: str = ""):
    """(route, name) of every pattern the site routes, includes followed."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from url_patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name


def pattern_key(route: str, name: str | None) -> str:
    return name or route


@dataclass(frozen=True)
class Site:
    slug: str
    ids: dict[str, int]  # ID_* -> pk
    sessions: dict[str, str]  # caller -> session key of a logged-in session


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker):
    """One world for the module, built in a transaction rolled back at its end; every test runs in
    its own savepoint, so a POST that does change something is undone before the next caller."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from pipeline.models import GateQuestion, PipelineRun, RunKind, RunStatus
    from pipeline.book.plan import approval_question
    from projects.models import Foreshadowing, Membership, Role
    from projects.sample_project import sample_project_create
    from projects.services.facts import story_fact_create
    from projects.services.projects import project_create
    from tests.api_fixtures import committed_chapter

    def user(name: str):  # no password: force_login needs none, and PBKDF2 costs most of a second each
        return get_user_model().objects.create_user(username=name, password=None)

    with django_db_blocker.unblock(), transaction.atomic():
        users = {who: user(who) for who in CALLERS[1:]}
        project = sample_project_create(owner=users["owner"], slug="snow")
        for role in ("viewer", "reviewer", "editor"):
            Membership.objects.create(project=project, user=users[role], role=Role(role))
        project_create(owner=users["outsider"], slug="other", title="别的书")  # a member, but elsewhere
        committed_chapter(project)
        Foreshadowing.objects.create(project=project, fid="F-001", description="玉佩")
        story_fact_create(project=project, editor=None, fact_id="fact-001", kind="promise", text="林枫答应护送陈老",
                          chapter=1)
        # the book stops at the plan of volume 2: the one active run, with its open question
        plan = PipelineRun.objects.create(project=project, kind=RunKind.PLAN, volume_number=2,
                                          status=RunStatus.WAITING, stage="volume:validate")
        spec = approval_question(2, 31, 60, [], [])
        question = GateQuestion.objects.create(project=project, run=plan, step="volume:validate", topic=spec["topic"],
                                               spec=spec, answer_path="staging/plan-approval.json")
        promotion = PipelineRun.objects.create(project=project, kind=RunKind.PROMOTION, status=RunStatus.DONE,
                                               stage="promote:platforms", chapter=1)
        sessions = {}
        for who, account in users.items():
            client = Client()
            client.force_login(account)
            sessions[who] = client.cookies[settings.SESSION_COOKIE_NAME].value
        yield Site(project.slug, {"ID_QUESTION": question.pk, "ID_RUN": plan.pk, "ID_PROMOTION": promotion.pk},
                   sessions)
        transaction.set_rollback(True)


@pytest.fixture
def world(site, db) -> Site:
    return site


def client_of(site: Site, who: str) -> Client:
    client = Client()
    if who != "anonymous":
        client.cookies[settings.SESSION_COOKIE_NAME] = site.sessions[who]
    return client


# URL arguments every page of a project names the same way; the rest are in the rows
DEFAULT_KWARGS = {"number": 1, "chapter": 1, "volume": 1}


def route_arguments(name: str) -> set[str]:
    return {arg for route, pattern_name in url_patterns() if pattern_name == name
            for arg in re.findall(r"<(?:\w+:)?(\w+)>", route)}


def url_of(page: Page, site: Site, *, slug: str | None = None) -> str:
    kwargs = {name: site.ids.get(value, value) for name, value in page.kwargs.items()}
    wanted = route_arguments(page.name)
    for name, value in DEFAULT_KWARGS.items():
        if name in wanted and name not in kwargs:
            kwargs[name] = value
    if "slug" in wanted:
        kwargs["slug"] = slug or site.slug
    if missing := wanted - set(kwargs):
        pytest.fail(f"the row of {page.name} needs kwargs for {', '.join(sorted(missing))}", pytrace=False)
    return reverse(page.name, kwargs=kwargs)


def expected(rule: tuple[Action | str, int] | None, other: tuple[Action | str, int] | None, who: str):
    """What ``who`` gets for a method whose row entry is ``rule`` (``other``: the page's other method)."""
    needs = (rule or other)[0]
    if who == "anonymous" and needs != ANYONE:
        return LOGIN  # login_required comes before the method check and before the project lookup
    if rule is None:
        return 405
    needs, allowed = rule
    if needs in (ANYONE, SIGNED_IN):
        return allowed
    if who == "outsider":
        return 404
    return allowed if role_allows(who, needs) else 403


CASES = [(row, method, who) for row in PAGES for method in ("get", "post") for who in CALLERS]


# (a parameter named "page" would make pytest-playwright run each case once per browser)
@pytest.mark.parametrize(("row", "method", "who"), CASES,
                         ids=[f"{row.label}-{method.upper()}-{who}" for row, method, who in CASES])
def test_every_page_answers_each_caller_as_the_matrix_says(world, row, method, who):
    rule, other = (row.get, row.post) if method == "get" else (row.post, row.get)
    want = expected(rule, other, who)
    response = getattr(client_of(world, who), method)(url_of(row, world), row.data)
    got = response.status_code
    to_login = f"{reverse('login')}?next="
    if want == LOGIN:
        assert got == 302 and response.url.startswith(to_login), (who, got)
        return
    assert got == want, (who, got, getattr(response, "url", ""))
    if want == 302:
        assert not response.url.startswith(to_login), (who, response.url)
    if want == 404 and who == "outsider":  # exactly what a project that does not exist answers
        twin = getattr(client_of(world, who), method)(url_of(row, world, slug="no-such-book"), row.data)
        assert twin.status_code == 404


def test_every_url_pattern_has_a_row_or_a_reason():
    """A new page must join PAGES (or SKIPPED, with the reason) before it can ship."""
    routed = {}
    for route, name in url_patterns():
        if not route.startswith(tuple(SKIPPED_PREFIXES)):
            routed[pattern_key(route, name)] = route
    assert all(page.get or page.post for page in PAGES), "a row must say what GET or POST needs"
    rows = {page.name for page in PAGES}
    missing = sorted(f"{key} ({route})" for key, route in routed.items() if key not in rows and key not in SKIPPED)
    assert not missing, f"web pages without a row in PAGES of {__name__}: {', '.join(missing)}"
    stale = sorted((rows | set(SKIPPED)) - set(routed))
    assert not stale, f"rows or skips for patterns that are no longer routed: {', '.join(stale)}"
    assert not rows & set(SKIPPED), "a pattern is both tested and skipped"


def test_the_skipped_prefixes_still_hold_patterns():
    routes = [route for route, _name in url_patterns()]
    for prefix in SKIPPED_PREFIXES:
        assert any(route.startswith(prefix) for route in routes), f"nothing is routed under {prefix} any more"


# --- rows of one project are not found through the address of another -------------------------


@pytest.mark.parametrize(("name", "method", "kwargs"), [
    ("chapter-read", "get", {"number": 1}),
    ("chapter-edit", "get", {"number": 1}),
    ("chapter-history", "get", {"number": 1}),
    ("run", "get", {"run_id": "ID_RUN"}),
    ("promotion", "get", {"run_id": "ID_PROMOTION"}),
    ("promotion-regenerate", "post", {"run_id": "ID_PROMOTION"}),
    ("gate-answer-web", "post", {"question_id": "ID_QUESTION"}),
])
def test_a_row_of_another_project_is_not_found_through_my_own(world, name, method, kwargs):
    """The outsider owns "other": its pages let them in, but snow's chapter, runs and question are
    looked up in "other" only."""
    client = client_of(world, "outsider")
    assert client.get(reverse("dashboard", args=["other"])).status_code == 200  # their own project
    url = reverse(name, kwargs={"slug": "other", **{k: world.ids.get(v, v) for k, v in kwargs.items()}})
    assert getattr(client, method)(url).status_code == 404


def test_the_project_list_shows_only_my_projects(world):
    body = client_of(world, "outsider").get(reverse("projects-home")).content.decode()
    assert "别的书" in body and "星火长夜" not in body
    assert "星火长夜" in client_of(world, "viewer").get(reverse("projects-home")).content.decode()


def test_a_member_asking_for_a_missing_project_gets_404(world):
    assert client_of(world, "owner").get(reverse("dashboard", args=["no-such-book"])).status_code == 404
