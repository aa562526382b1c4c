"""Story pages (projects/views/). Pipeline pages (dashboard, gates, plans, runs) are in
pipeline/web/urls.py under the same /p/<slug>/ prefix."""
from django.urls import path

from projects.views import (
    chapters,
    character_edit,
    contract_edit,
    downloads,
    facts,
    foreshadowing_edit,
    projects,
    relationship_edit,
    schedule_edit,
    story_object_edit,
    world,
    world_text,
)

urlpatterns = [
    path("", projects.project_list, name="projects-home"),
    path("new/", projects.project_create_view, name="project-create-web"),
    path("new/slug/", projects.slug_suggestion_view, name="slug-suggestion"),
    path("import/", projects.project_import_view, name="project-import-web"),
    path("p/<slug:slug>/members/", projects.members_view, name="members"),
    path("p/<slug:slug>/settings/", projects.settings_view, name="settings"),
    path("p/<slug:slug>/settings/platform/", projects.platform_settings_view, name="settings-platform"),
    path("p/<slug:slug>/chapters/", chapters.chapter_list, name="chapter-list"),
    path("p/<slug:slug>/chapters/<int:number>/", chapters.chapter_read, name="chapter-read"),
    path("p/<slug:slug>/chapters/<int:number>/edit/", chapters.chapter_edit, name="chapter-edit"),
    path("p/<slug:slug>/chapters/<int:number>/history/", chapters.chapter_history, name="chapter-history"),
    path("p/<slug:slug>/world/", world.world_view, name="world"),
    path("p/<slug:slug>/world/docs/<str:key>/", world_text.world_text_view, {"kind": "docs"}, name="world-doc"),
    path("p/<slug:slug>/world/characters/<str:key>/", world_text.world_text_view, {"kind": "characters"},
         name="world-character"),
    path("p/<slug:slug>/state/", world.state_view, name="state"),
    # editing pages live under edit/, so that no name of a document or a character can clash with "new"
    path("p/<slug:slug>/edit/characters/new/", character_edit.character_edit, name="character-new"),
    path("p/<slug:slug>/edit/characters/<slug:character_slug>/", character_edit.character_edit, name="character-edit"),
    path("p/<slug:slug>/edit/relationships/", relationship_edit.relationships_edit, name="relationships-edit"),
    path("p/<slug:slug>/edit/foreshadowing/new/", foreshadowing_edit.foreshadowing_edit, name="foreshadowing-new"),
    path("p/<slug:slug>/edit/foreshadowing/<path:fid>/", foreshadowing_edit.foreshadowing_edit,
         name="foreshadowing-edit"),
    path("p/<slug:slug>/edit/schedule/<int:volume>/", schedule_edit.schedule_edit, name="schedule-edit"),
    path("p/<slug:slug>/facts/", facts.fact_list, name="fact-list"),
    path("p/<slug:slug>/edit/facts/new/", facts.fact_edit, name="fact-new"),
    path("p/<slug:slug>/edit/facts/<slug:fact_id>/", facts.fact_edit, name="fact-edit"),
    path("p/<slug:slug>/edit/<str:kind>/new/", story_object_edit.story_object_edit, name="story-new"),
    path("p/<slug:slug>/edit/<str:kind>/<str:key>/", story_object_edit.story_object_edit, name="story-edit"),
    path("p/<slug:slug>/contracts/", contract_edit.contract_list, name="contract-list"),
    path("p/<slug:slug>/contracts/<int:chapter>/edit/", contract_edit.contract_edit, name="contract-edit"),
    path("p/<slug:slug>/download/<str:kind>/", downloads.book_download, name="download"),
]
