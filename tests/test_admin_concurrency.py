"""Two people saving one object in the admin at once: one save and conflict messages for the
others, never a 500 (PostgreSQL row locks, real threads against the same rows)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from projects.models import Character
from projects.sample_project import sample_project_create
from tests.admin_fixtures import login_client
from tests.test_admin import change_url, valid_change_data


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_admin_saves_of_one_character_give_one_save_and_conflicts(make_user):
    owner = make_user("alice")
    project = sample_project_create(owner=owner, slug="race")
    character = project.characters.get(slug="lin-feng")
    client = login_client(owner)
    posts = [valid_change_data(client, character, display_name=f"林枫{i}") for i in range(12)]
    start = threading.Barrier(len(posts))
    statuses: list[tuple[int, str]] = []

    def save(data: dict[str, str]) -> None:
        try:
            mine = login_client(owner)
            start.wait()
            response = mine.post(change_url(character), data)
            statuses.append((response.status_code, response.content.decode()))
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(data,)) for data in posts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    codes = sorted(code for code, _ in statuses)
    assert codes == [200] * (len(posts) - 1) + [302]
    assert all("Someone else saved this" in body for code, body in statuses if code == 200)
    after = Character.objects.get(pk=character.pk)
    assert after.version == character.version + 1
    assert after.display_name in {f"林枫{i}" for i in range(12)}
