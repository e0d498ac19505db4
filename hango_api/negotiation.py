"""Content negotiation: an unknown ``?format=`` is a 406 like an unknown Accept, not DRF's 404
(which reads as "this list does not exist")."""

from __future__ import annotations

from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class ContentNegotiation(DefaultContentNegotiation):
    def filter_renderers(self, renderers, format):
        try:
            return super().filter_renderers(renderers, format)
        except Http404:
            raise NotAcceptable(available_renderers=renderers) from None
