"""Prompt templates: the shipped defaults render, and a project's override is validated on every
save path (model, service, admin) before a stage can use it."""
from __future__ import annotations

import pytest
from django.urls import reverse

from pipeline.models import PromptTemplate
from pipeline.prompts.overrides import prompt_template_source
from pipeline.prompts.validation import prompt_template_errors
from pipeline.prompts import SAMPLE_CONTEXTS, default_source, template_names
from projects.errors import InvalidData
from projects.services.editing import story_object_create


@pytest.mark.parametrize("name", template_names())
def test_default_templates_render_against_their_samples(name):
    assert prompt_template_errors(name, default_source(name)) == []


def test_unknown_template_name_is_refused():
    assert "unknown template" in prompt_template_errors("secret.j2", "x")[0]


@pytest.mark.parametrize("source,fragment", [
    ("{{ ''.__class__.__mro__ }}", "refused by the sandbox"),
    ("{{ no_such_variable }}", "undefined"),
    ("{% for x in objectives %}", "syntax"),
    ("{{ 'x' * 100000000 }}", "more than 200000"),
])
def test_bad_overrides_are_refused_with_the_reason(source, fragment):
    errors = prompt_template_errors("draft.j2", source)
    assert errors and fragment in " ".join(errors).lower()


@pytest.mark.django_db
def test_service_save_validates_and_lookup_prefers_the_override(sample_project, make_user):
    editor = make_user("ed")
    with pytest.raises(InvalidData, match="source"):
        story_object_create(instance=PromptTemplate(project=sample_project, name="draft.j2",
                                                    source="{{ ''.__class__ }}"), editor=editor)
    assert prompt_template_source(project_id=sample_project.pk, name="draft.j2") == default_source("draft.j2")
    story_object_create(instance=PromptTemplate(project=sample_project, name="draft.j2",
                                                source="写第 {{ chapter }} 章。"), editor=editor)
    assert prompt_template_source(project_id=sample_project.pk, name="draft.j2") == "写第 {{ chapter }} 章。"


@pytest.mark.django_db
def test_admin_refuses_an_escaping_override_and_records_the_editor(make_user, client):
    from projects.sample_project import sample_project_create

    owner = make_user("owner")
    project = sample_project_create(owner=owner, slug="tpl")
    client.force_login(owner)
    url = reverse("admin:pipeline_prompttemplate_add")
    bad = client.post(url, {"project": project.pk, "name": "judge.j2", "source": "{{ cycler.__init__.__globals__ }}"})
    assert bad.status_code == 200 and "refused by the sandbox" in bad.content.decode()
    assert not PromptTemplate.objects.exists()
    good = client.post(url, {"project": project.pk, "name": "judge.j2", "source": "评审第 {{ chapter }} 章。"})
    assert good.status_code == 302
    saved = PromptTemplate.objects.get()
    assert saved.updated_by == owner and saved.version == 1
    assert set(SAMPLE_CONTEXTS) == set(template_names())
