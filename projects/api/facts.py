"""The facts ledger (issue #18), read-only like the other story objects: people edit facts in the
admin and on the web pages (versioned, with history); the pipeline adds and closes them."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.errors import InvalidData
from projects.models import StoryFact
from projects.permissions import Action
from projects.selectors import project_get_for_member

STATUS_FILTERS = ("open", "closed", "all")


class FactListApi(APIView):
    pagination_class = cursor_by("fact_id")

    class FactListOutput(serializers.ModelSerializer):
        id = serializers.CharField(source="fact_id")

        class Meta:
            model = StoryFact
            fields = ["id", "kind", "text", "chapter", "characters", "storyline", "foreshadowing", "status",
                      "closed_chapter", "closing_note", "origin", "version", "updated_at"]

    @extend_schema(responses=FactListOutput(many=True), parameters=[OpenApiParameter(
        "status", str, enum=list(STATUS_FILTERS), description="open (default), closed (fulfilled or cancelled), all")])
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        status = request.query_params.get("status", "open")
        if status not in STATUS_FILTERS:
            raise InvalidData(f"status must be one of {', '.join(STATUS_FILTERS)}", extra={"field": "status"})
        facts = project.facts.all()
        if status == "open":
            facts = facts.filter(status="open")
        elif status == "closed":
            facts = facts.exclude(status="open")
        return paginated(self, facts, self.FactListOutput)
