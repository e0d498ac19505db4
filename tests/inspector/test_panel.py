"""The Context panel's admin page (inspector/panel.py): reached from the session's page and the
session list, a shell for panel.js with what it needs to call the API, its script and style
served by the project itself, and a plain message for a staff user who cannot be a member the
API would answer."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import Member, Role
from runs.models import Session


@pytest.fixture
def session(alice, make_session) -> Session:
    return Session.objects.get(pk=make_session(alice, title="<b>bold</b> title")["id"])


def logged_in(client, tenant=None, role: str = Role.OWNER):
    user = get_user_model().objects.create_superuser("kim@acme.test", "kim@acme.test", "pw")
    if tenant is not None:
        Member.objects.create(tenant=tenant, user=user, role=role)
    client.force_login(user)
    return client


def panel(session: Session) -> str:
    return reverse("admin:runs_session_context", args=[session.pk])


def test_the_session_page_and_list_link_to_the_panel(client, tenant, session):
    client = logged_in(client, tenant)
    page = client.get(reverse("admin:runs_session_change", args=[session.pk])).content.decode()
    assert f'href="{panel(session)}" class="context-link">Context</a>' in page
    listed = client.get(reverse("admin:runs_session_changelist")).content.decode()
    assert f'href="{panel(session)}" class="context-link">Context</a>' in listed


def test_the_panel_page_is_a_shell_for_the_script(client, tenant, session):
    page = logged_in(client, tenant).get(panel(session))
    assert page.status_code == 200
    html = page.content.decode()
    shell = re.search(r'<div id="context-panel"[^>]*>', html)
    assert shell is not None
    assert f'data-session="{session.pk}"' in shell.group(0)
    assert f'data-tenant="{session.tenant_id}"' in shell.group(0)
    assert 'data-api="/v1/"' in shell.group(0)
    assert re.search(r'data-csrf="[A-Za-z0-9]{64}"', shell.group(0))
    assert "&lt;b&gt;bold&lt;/b&gt; title" in html and "<b>bold</b>" not in html
    assert '<script src="/static/inspector/panel.js" defer></script>' in html
    for asset in ("/static/inspector/panel.js", "/static/inspector/panel.css"):
        served = client.get(asset)
        assert served.status_code == 200, asset
        served.close()


def test_a_staff_user_of_no_membership_is_told_plainly(client, session):
    page = logged_in(client).get(panel(session))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="context-refusal"' in html and "not a member of the tenant “acme”" in html
    assert 'id="context-panel"' not in html and "panel.js" not in html


def test_a_plain_member_is_told_the_session_is_another_members(client, tenant, session):
    html = logged_in(client, tenant, Role.MEMBER).get(panel(session)).content.decode()
    assert "you may see only your own sessions" in html
    assert 'id="context-panel"' not in html


def test_an_unknown_session_goes_back_to_the_list(client, tenant, db):
    response = logged_in(client, tenant).get(
        reverse("admin:runs_session_context", args=["5b3e6a2c-0000-4000-8000-000000000000"]))
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:runs_session_changelist")


def test_the_panel_needs_a_staff_login(client, session):
    response = client.get(panel(session))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
