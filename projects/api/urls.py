from django.urls import path

from projects.api import converters  # noqa: F401  (registers <id:…>, a bounded integer)

from projects.api.facts import FactListApi
from projects.api.chapters import ChapterDetailApi, ChapterEvaluationApi, ChapterListApi, ChapterLogApi
from projects.api.filetree import ProjectExportApi, ProjectImportApi
from projects.api.members import MemberAccountCreateApi, MemberDetailApi, MemberListInviteApi
from projects.api.projects import ProjectDetailApi, ProjectListCreateApi
from projects.api.state import StoryStateApi, StoryStateAtChapterApi
from projects.api.story import (
    CharacterDetailApi,
    CharacterListApi,
    ForeshadowingListApi,
    StorylineDetailApi,
    StorylineListApi,
    VolumeDetailApi,
    VolumeListApi,
    WorldDocDetailApi,
    WorldDocListApi,
    WorldRuleListApi,
)

P = "projects/<slug:slug>"

urlpatterns = [
    path("projects", ProjectListCreateApi.as_view(), name="api-project-list"),
    path("projects/import", ProjectImportApi.as_view(), name="project-import"),
    path(f"{P}", ProjectDetailApi.as_view(), name="api-project-detail"),
    path(f"{P}/export.zip", ProjectExportApi.as_view(), name="project-export"),
    path(f"{P}/members", MemberListInviteApi.as_view(), name="api-member-list"),
    path(f"{P}/new-members", MemberAccountCreateApi.as_view(), name="api-member-account-create"),
    path(f"{P}/members/<str:username>", MemberDetailApi.as_view(), name="api-member-detail"),
    path(f"{P}/volumes", VolumeListApi.as_view(), name="api-volume-list"),
    path(f"{P}/volumes/<id:number>", VolumeDetailApi.as_view(), name="api-volume-detail"),
    path(f"{P}/chapters", ChapterListApi.as_view(), name="api-chapter-list"),
    path(f"{P}/chapters/<id:number>", ChapterDetailApi.as_view(), name="api-chapter-detail"),
    path(f"{P}/chapters/<id:number>/evaluation", ChapterEvaluationApi.as_view(), name="api-chapter-evaluation"),
    path(f"{P}/chapters/<id:number>/log", ChapterLogApi.as_view(), name="api-chapter-log"),
    path(f"{P}/characters", CharacterListApi.as_view(), name="api-character-list"),
    path(f"{P}/characters/<str:character>", CharacterDetailApi.as_view(), name="api-character-detail"),
    path(f"{P}/storylines", StorylineListApi.as_view(), name="api-storyline-list"),
    path(f"{P}/storylines/<str:storyline>", StorylineDetailApi.as_view(), name="api-storyline-detail"),
    path(f"{P}/world-rules", WorldRuleListApi.as_view(), name="api-world-rule-list"),
    path(f"{P}/world-docs", WorldDocListApi.as_view(), name="api-world-doc-list"),
    path(f"{P}/world-docs/<str:name>", WorldDocDetailApi.as_view(), name="api-world-doc-detail"),
    path(f"{P}/foreshadowing", ForeshadowingListApi.as_view(), name="api-foreshadowing-list"),
    path(f"{P}/facts", FactListApi.as_view(), name="api-fact-list"),
    path(f"{P}/state", StoryStateApi.as_view(), name="api-state"),
    path(f"{P}/state/at/<id:chapter>", StoryStateAtChapterApi.as_view(), name="api-state-at"),
]
