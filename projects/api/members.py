"""Members of a project: anyone in it sees who else is; the owner invites an account by user name
or e-mail, creates an account for someone new (``…/new-members``: a one-time link to set its
password, or an e-mail with it where e-mail is configured), changes roles and removes people (a
project always keeps one owner: ``projects.services.projects``). The owner check comes before any
lookup, so nobody else learns whether an account exists."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.api.strict import StrictInput
from projects.errors import NotFound
from projects.models import Membership, Project, Role
from projects.permissions import Action
from projects.selectors import project_get_for_member
from projects.services.invitations import member_account_invite, member_invite
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
        username = serializers.CharField(max_length=254, required=False,
                                         help_text="The account's user name, or its e-mail.")
        email = serializers.EmailField(max_length=254, required=False, help_text="The account's e-mail.")
        role = serializers.ChoiceField(choices=Role.choices)  # no default: the role is always chosen

        def validate(self, data):
            if bool(data.get("username")) == bool(data.get("email")):
                raise serializers.ValidationError("Give either username or email.")
            return data

    @extend_schema(responses=MembershipOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return paginated(self, project.memberships.select_related("user"), MembershipOutput)

    @extend_schema(request=MemberInviteInput, responses={201: MembershipOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        incoming = self.MemberInviteInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        membership = member_invite(project=project, identifier=data.get("username") or data["email"], role=data["role"])
        return Response(MembershipOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberAccountCreateApi(APIView):
    """An account for someone new, member with the chosen role. Where e-mail is configured the
    one-time link goes to them (``invitation: "emailed"``); otherwise it is in ``password_link``,
    once, for the owner to pass on."""

    class MemberAccountCreateInput(StrictInput):
        username = serializers.CharField(max_length=150)
        email = serializers.EmailField(max_length=254)
        role = serializers.ChoiceField(choices=Role.choices)

    class MemberAccountCreateOutput(serializers.Serializer):
        username = serializers.CharField()
        email = serializers.CharField()
        role = serializers.CharField()
        invitation = serializers.ChoiceField(choices=["emailed", "link"])
        password_link = serializers.CharField(allow_null=True)
        email_error = serializers.CharField(allow_blank=True)

    @extend_schema(request=MemberAccountCreateInput, responses={201: MemberAccountCreateOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        incoming = self.MemberAccountCreateInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        new = member_account_invite(project=project, inviter=request.user, site_url=request.build_absolute_uri("/"),
                                    **incoming.validated_data)
        user = new.membership.user
        output = {"username": user.get_username(), "email": user.email, "role": new.membership.role,
                  "invitation": "emailed" if new.emailed else "link", "password_link": new.link or None,
                  "email_error": new.email_error}
        return Response(self.MemberAccountCreateOutput(output).data, status=status.HTTP_201_CREATED)


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
