"""``GET /v1/me``: who the caller is — their tenant, member, role and key — for any member.

What a newcomer holding only a key needs to fill a broker trigger's message (the tenant's id and
the key's prefix), and what a script checks before it acts: the same answer the CLI's ``hango
whoami`` prints.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from accounts.models import ApiKey, Role


class MeTenantOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The tenant's id: what a broker trigger's message "
                               "names as `tenant`.")
    name = serializers.CharField()


class MeMemberOutput(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.CharField(source="user.email", help_text="The member's user's email.")


class MeKeyOutput(serializers.Serializer):
    prefix = serializers.CharField(help_text="What a broker trigger's message names as `key`.")
    name = serializers.CharField()


class MeOutput(serializers.Serializer):
    tenant = MeTenantOutput()
    member = MeMemberOutput()
    role = serializers.ChoiceField(choices=Role.choices, help_text="`owner` and `admin` see "
                                   "and change the whole tenant; `member` their own objects.")
    key = MeKeyOutput(allow_null=True, help_text="The API key the request carries (null for "
                      "the admin's login session).")


class MeApi(APIView):
    @extend_schema(operation_id="me_retrieve", responses=MeOutput)
    def get(self, request):
        """The caller: their tenant, their member and its role, and the key they called with."""
        member = caller(request)
        key = request.auth if isinstance(request.auth, ApiKey) else None
        return Response(MeOutput({"tenant": member.tenant, "member": member,
                                  "role": member.role, "key": key}).data)
