"""Read-only story objects: volumes, characters, storylines, world rules and documents, and the
foreshadowing ledger. People edit these in the admin (versioned, with history); the API reads them."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.errors import NotFound
from projects.models import Character, Foreshadowing, Storyline, Volume, WorldDoc, WorldRule
from projects.permissions import Action
from projects.selectors import foreshadowing_flags, project_get_for_member


def _one(queryset, message: str, **lookup):
    row = queryset.filter(**lookup).first()
    if row is None:
        raise NotFound(message)
    return row


class VolumeListApi(APIView):
    pagination_class = cursor_by("number")

    class VolumeListOutput(serializers.ModelSerializer):
        class Meta:
            model = Volume
            fields = ["number", "title", "status", "version", "updated_at"]

    @extend_schema(responses=VolumeListOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        volumes = project.volumes.only("number", "title", "status", "version", "updated_at")
        return paginated(self, volumes, self.VolumeListOutput)


class VolumeDetailApi(APIView):
    class VolumeDetailOutput(serializers.ModelSerializer):
        class Meta:
            model = Volume
            fields = ["number", "title", "status", "outline", "storyline_schedule", "foreshadowing_plan",
                      "new_characters", "review", "version", "created_at", "updated_at"]

    @extend_schema(responses=VolumeDetailOutput)
    def get(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(self.VolumeDetailOutput(_one(project.volumes, "No such volume.", number=number)).data)


class CharacterListApi(APIView):
    pagination_class = cursor_by("slug")

    class CharacterListOutput(serializers.ModelSerializer):
        class Meta:
            model = Character
            fields = ["slug", "display_name", "status", "canon_status", "aliases", "version", "updated_at"]

    @extend_schema(responses=CharacterListOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        characters = project.characters.only(*self.CharacterListOutput.Meta.fields)
        return paginated(self, characters, self.CharacterListOutput)


class CharacterDetailApi(APIView):
    class CharacterDetailOutput(serializers.ModelSerializer):
        class Meta:
            model = Character
            fields = ["slug", "display_name", "status", "canon_status", "aliases", "profile", "contracts", "extra",
                      "version",
                      "created_at", "updated_at"]

    @extend_schema(responses=CharacterDetailOutput)
    def get(self, request, slug: str, character: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        row = _one(project.characters, "No such character.", slug=character)
        return Response(self.CharacterDetailOutput(row).data)


class StorylineListApi(APIView):
    pagination_class = cursor_by("slug")

    class StorylineOutput(serializers.ModelSerializer):
        class Meta:
            model = Storyline
            fields = ["slug", "name", "type", "scope", "status", "pov_characters", "affiliated_factions", "timeline",
                      "description", "introduced_volume", "memory", "version"]

    @extend_schema(responses=StorylineOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return paginated(self, project.storylines.all(), self.StorylineOutput)


class StorylineDetailApi(APIView):
    @extend_schema(responses=StorylineListApi.StorylineOutput)
    def get(self, request, slug: str, storyline: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        row = _one(project.storylines, "No such storyline.", slug=storyline)
        return Response(StorylineListApi.StorylineOutput(row).data)


class WorldRuleListApi(APIView):
    pagination_class = cursor_by("rule_id")

    class WorldRuleOutput(serializers.ModelSerializer):
        class Meta:
            model = WorldRule
            fields = ["rule_id", "category", "rule", "constraint_type", "canon_status", "exceptions",
                      "introduced_chapter", "last_verified", "keywords", "version"]

    @extend_schema(responses=WorldRuleOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return paginated(self, project.world_rules.all(), self.WorldRuleOutput)


class WorldDocListApi(APIView):
    pagination_class = cursor_by("name")

    class WorldDocListOutput(serializers.ModelSerializer):
        class Meta:
            model = WorldDoc
            fields = ["name", "version", "updated_at"]

    @extend_schema(responses=WorldDocListOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return paginated(self, project.world_docs.only("name", "version", "updated_at"), self.WorldDocListOutput)


class WorldDocDetailApi(APIView):
    class WorldDocDetailOutput(serializers.ModelSerializer):
        class Meta:
            model = WorldDoc
            fields = ["name", "content", "version", "updated_at"]

    @extend_schema(responses=WorldDocDetailOutput)
    def get(self, request, slug: str, name: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(self.WorldDocDetailOutput(_one(project.world_docs, "No such document.", name=name)).data)


class ForeshadowingListApi(APIView):
    """The ledger (foreshadowing/global.json), each item flagged overdue (facts §10.9) and dormant
    (facts §12, with the chapters of silence)."""

    pagination_class = cursor_by("fid")

    class ForeshadowingOutput(serializers.ModelSerializer):
        id = serializers.CharField(source="fid")
        overdue = serializers.SerializerMethodField()
        dormant_for = serializers.SerializerMethodField(help_text="Chapters of silence if dormant, else null.")

        class Meta:
            model = Foreshadowing
            fields = ["id", "description", "scope", "status", "planted_chapter", "planted_storyline",
                      "target_resolve_start", "target_resolve_end", "last_updated_chapter", "overdue", "dormant_for"]

        def get_overdue(self, row) -> bool:
            return row.fid in self.context["flags"].overdue

        def get_dormant_for(self, row) -> int | None:
            return self.context["flags"].dormant.get(row.fid)

    @extend_schema(responses=ForeshadowingOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        flags = foreshadowing_flags(project=project)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(project.foreshadowing.all(), request, view=self)
        data = self.ForeshadowingOutput(page, many=True, context={"flags": flags}).data
        return paginator.get_paginated_response(data)
