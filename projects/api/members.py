"""Members of a project: anyone in it sees who else is; the owner invites by username, changes
roles and removes people (a project always keeps one owner: ``projects.services.projects``)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.api.strict import StrictInput
from projects.errors import InvalidData, NotFound
from projects.models import Membership, Project, Role
from projects.permissions import Action
from projects.selectors import project_get_for_member
from projects.services.projects import membership_remove, membership_set_role


class MembershipOutput(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]


def _membership(project: Project, username: str) -> Membership:
    membership = Membership.objects.filter(project=project, user__username=username).select_related("user").first()
    if membership is None:
        raise NotFound("No such member.")
    return membership


class MemberListInviteApi(APIView):
    pagination_class = cursor_by("pk")

    class MemberInviteInput(StrictInput):
        username = serializers.CharField(max_length=150)
        role = serializers.ChoiceField(choices=Role.choices)

    @extend_schema(responses=MembershipOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return paginated(self, project.memberships.select_related("user"), MembershipOutput)

    @extend_schema(request=MemberInviteInput, responses={201: MembershipOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        incoming = self.MemberInviteInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        user = get_user_model().objects.filter(username=incoming.validated_data["username"], is_active=True).first()
        if user is None:
            raise InvalidData("username: no such user", extra={"fields": {"username": ["No such user."]}})
        membership = membership_set_role(project=project, user=user, role=incoming.validated_data["role"])
        return Response(MembershipOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailApi(APIView):
    class MemberRoleInput(StrictInput):
        role = serializers.ChoiceField(choices=Role.choices)

    @extend_schema(request=MemberRoleInput, responses=MembershipOutput)
    def patch(self, request, slug: str, username: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        membership = _membership(project, username)
        incoming = self.MemberRoleInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        membership = membership_set_role(project=project, user=membership.user, role=incoming.validated_data["role"])
        return Response(MembershipOutput(membership).data)

    @extend_schema(responses={204: None})
    def delete(self, request, slug: str, username: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        membership_remove(membership=_membership(project, username))
        return Response(status=status.HTTP_204_NO_CONTENT)
