"""Every write route takes an ``Idempotency-Key`` (:mod:`accounts.idempotency`), from one place: a
middleware around the views, so a new route has it without a line of its own. A view class that
must not (a POST that writes nothing the caller retries for) says why in
``idempotency_exempt``; ``tests/accounts/test_idempotent_requests.py`` walks the URL conf and
lists both kinds, so a route cannot leave the rule unnoticed.

A request with a key runs in one transaction, opened here around the whole view: the key's lock
first (a second request with the key meanwhile answers 409 ``idempotency_key_in_progress``),
then the stored answer if there is one, else the view, then its answer stored — all of it
committed at once. What the views hand on after a commit (a run's task, a webhook's send,
``transaction.on_commit``) happens once, after that one commit. No view that takes a key calls
anything slow outside hango while it runs: those that do (a context try's model call) are
exempt, so no transaction is held across one.

Which answers are kept: 2xx only. A 4xx changed nothing (the API's rule), so its retry runs
again and may succeed once the cause is gone (the session's run ended, the quota grew); a 5xx
is rolled back with everything the view wrote, so its retry runs as if it were the first.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import InterfaceError, OperationalError, transaction
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, ResolverMatch, resolve
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.authentication import StaffSession
from accounts.idempotency import (
    HEADER,
    WRITE_METHODS,
    BadKey,
    Claim,
    answer_again,
    fingerprint,
    in_progress,
    parse_key,
    store,
    stored,
)
from accounts.models import ApiKey, Member
from hango_project.errors import error_json
from hango_project.middleware import database_unavailable


class IdempotencyMiddleware:
    """Answers a write with an ``Idempotency-Key`` once: the first time by its view, in a
    transaction that keeps the answer under the key; again from the kept answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        raw = request.headers.get(HEADER)
        match = _match(request) if raw is not None and request.method in WRITE_METHODS else None
        view = covered_view(match) if match is not None else None
        # A method the view has no handler for is its 405, whatever the key.
        if (raw is None or match is None or view is None
                or not hasattr(view, (request.method or "").lower())):
            return self.get_response(request)
        try:
            key = parse_key(raw)
        except BadKey as exc:
            return error_json(400, "invalid_idempotency_key", str(exc), {"header": HEADER})
        try:
            member = _caller(request, view, match)
            if member is None:  # refused or anonymous: the view says so; nothing is kept
                return self.get_response(request)
            claim = Claim(member=member, key=key, method=request.method or "",
                          path=request.get_full_path_info(), fingerprint=fingerprint(request))
            return self._once(request, claim)
        except (InterfaceError, OperationalError) as exc:  # the commit's reply among them
            return database_unavailable(request, exc)

    def _once(self, request: HttpRequest, claim: Claim) -> HttpResponse:
        with transaction.atomic():
            if not claim.lock():
                return in_progress(claim)
            kept = stored(claim)
            if kept is not None:
                return answer_again(claim, kept)
            response = self.get_response(request)
            if response.status_code >= 500:
                transaction.set_rollback(True)
            elif 200 <= response.status_code < 300:
                store(claim, response)
            return response


def _match(request: HttpRequest) -> ResolverMatch | None:
    try:
        return resolve(request.path_info)
    except Resolver404:
        return None


def covered_view(match: ResolverMatch) -> type[APIView] | None:
    """The API view class a route's writes go to when they take a key; None for a route that is
    not an API view, or whose view is exempt (``idempotency_exempt``)."""
    view = getattr(match.func, "cls", None)
    if not isinstance(view, type) or not issubclass(view, APIView):
        return None
    if getattr(view, "idempotency_exempt", ""):
        return None
    return view


def _caller(request: HttpRequest, view: type[APIView], match: ResolverMatch) -> Member | None:
    """The member the view will act as, by the view's own authenticators (a key's, or a staff
    login session's); None when it refuses the request or it has no credential. The view
    authenticates again; only writes with a key pay that second look-up."""
    authenticators = view(**getattr(match.func, "initkwargs", {})).get_authenticators()
    user = request.__dict__.get("user")  # a DRF Request sets it: the view must see the original
    try:
        credential = Request(request, authenticators=authenticators).auth
    except APIException:
        return None
    finally:
        if user is not None:
            request.user = user
    if isinstance(credential, ApiKey | StaffSession):
        return credential.member
    return None
