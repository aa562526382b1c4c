"""The story state: as it is now (state/current-state.json), or as it stood after chapter N
(the changelog replayed up to N)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.errors import NotFound
from projects.models import StoryState
from projects.permissions import Action
from projects.selectors import project_get_for_member, story_state_at_chapter


class StoryStateApi(APIView):
    class StoryStateOutput(serializers.Serializer):
        state_version = serializers.IntegerField()
        schema_version = serializers.IntegerField()
        data = serializers.JSONField()

    @extend_schema(responses=StoryStateOutput)
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        state = StoryState.objects.filter(project=project).first()
        if state is None:
            raise NotFound("This project has no story state yet.")
        return Response(self.StoryStateOutput(state).data)


class StoryStateAtChapterApi(APIView):
    """The state after chapter ``chapter`` committed (0: before the first chapter)."""

    class StoryStateAtChapterOutput(serializers.Serializer):
        chapter = serializers.IntegerField()
        state_version = serializers.IntegerField()
        data = serializers.JSONField()

    @extend_schema(responses=StoryStateAtChapterOutput)
    def get(self, request, slug: str, chapter: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        if chapter > project.last_completed_chapter:
            raise NotFound(f"Chapter {chapter} is not committed yet.")
        data = story_state_at_chapter(project=project, chapter=chapter)
        output = {"chapter": chapter, "state_version": data.get("state_version", 0), "data": data}
        return Response(self.StoryStateAtChapterOutput(output).data)
