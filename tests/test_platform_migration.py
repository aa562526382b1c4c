"""Migration 0006 (issue #17 §1): old platform values become writing platforms, and the platform
files an earlier import kept verbatim become the project's platform data."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from projects.platforms.profiles import default_platform_profile

BEFORE = [("projects", "0005_project_manual_cost_cap")]
AFTER = [("projects", "0006_project_platform_profiles")]


@pytest.mark.django_db(transaction=True)
def test_old_values_and_kept_platform_files_are_carried_over():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Project, ExtraFile = old.get_model("projects", "Project"), old.get_model("projects", "ExtraFile")
    try:
        Project.objects.create(slug="t", title="t", target_platform="tomato")
        Project.objects.create(slug="x", title="x", target_platform="xiaohongshu")
        imported = Project.objects.create(slug="i", title="i", target_platform="")
        profile = {**default_platform_profile("jinjiang"), "created_at": "2026-01-02T00:00:00Z"}
        ExtraFile.objects.create(project=imported, path="platform-profile.json", content=json.dumps(profile))
        ExtraFile.objects.create(project=imported, path="platform-writing-guide.md", content="# 指南")
        broken = Project.objects.create(slug="b", title="b", target_platform="qidian")
        ExtraFile.objects.create(project=broken, path="platform-profile.json", content='{"platform": "qidian"}')

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        Project, ExtraFile = new.get_model("projects", "Project"), new.get_model("projects", "ExtraFile")
        assert Project.objects.get(slug="t").target_platform == "fanqie"
        assert Project.objects.get(slug="x").target_platform == "general"
        moved = Project.objects.get(slug="i")
        assert (moved.target_platform, moved.platform_profile, moved.platform_writing_guide) == (
            "jinjiang", profile, "# 指南")
        assert not ExtraFile.objects.filter(project=moved).exists()
        kept = Project.objects.get(slug="b")  # a profile today's checks refuse stays a kept file
        assert kept.platform_profile is None
        assert ExtraFile.objects.filter(project=kept, path="platform-profile.json").exists()
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
