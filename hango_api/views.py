"""Small helpers every API view shares: a paged list view, its page, a checked body. The
caller's member comes from :func:`accounts.authentication.caller`."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hango_api.pagination import CursorPage


class ListApi(APIView):
    """A view whose GET answers a page of ``pagination_class``: drf-spectacular reads the same
    attribute, so the schema documents the ``{"results", "next", "previous"}`` envelope (and the
    ``cursor`` and ``limit`` parameters) of exactly the pages the view answers."""

    pagination_class: type[CursorPage] = CursorPage


def paginated(view: ListApi, queryset: QuerySet,
              output: type[serializers.BaseSerializer]) -> Response:
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response(output(page, many=True).data)


def validated(input_cls: type[serializers.Serializer], request: Request, **kwargs) -> dict:
    """The request body checked by ``input_cls``; a JSON body that is not an object is a 422."""
    serializer = input_cls(data=request.data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
