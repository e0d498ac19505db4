"""The admin's comparison of two eval runs (evals/admin_compare.py): the action on two selected
eval runs, the page it leads to (the API's comparison), and its tenancy as a staff member."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import Member, Role
from tests.support.evals import DEMO_CASE, make_suite, regressed_and_fixed, start

pytestmark = pytest.mark.usefixtures("inline_runs")


@pytest.fixture
def staff(client, tenant):
    """A staff user logged in to the admin, an owner of ``tenant``."""
    user = get_user_model().objects.create_superuser("kim@acme.test", "kim@acme.test", None)
    Member.objects.create(tenant=tenant, user=user, role=Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def two_runs(alice, make_agent):
    """A baseline where ``echoes`` passes and ``fails`` fails, and a run where the reverse."""
    return regressed_and_fixed(alice, make_agent(alice))


def compare_page(base_id, head_id) -> str:
    return reverse("admin:evals_evalrun_compare", args=[base_id, head_id])


def rows(html: str, table: str) -> list[str]:
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S)
    assert body is not None, table
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
            for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]


def test_the_action_on_two_eval_runs_opens_their_comparison(staff, alice, two_runs):
    base, head = two_runs
    response = staff.post(reverse("admin:evals_evalrun_changelist"),
                          {"action": "compare_selected",
                           "_selected_action": [head["id"], base["id"]]})
    assert response.status_code == 302
    assert response["Location"] == compare_page(base["id"], head["id"])  # the older: baseline

    page = staff.get(response["Location"])

    assert page.status_code == 200
    html = page.content.decode()
    assert rows(html, "eval-compare-regressed")[1:] == ["echoes passed failed"]
    assert rows(html, "eval-compare-fixed")[1:] == ["fails failed passed"]
    totals = {row.split(" ")[0]: row for row in rows(html, "eval-compare-totals")[1:]}
    assert totals["pass"] == "pass rate 0.5 0.5 0.0"
    assert set(totals) >= {"tokens", "latency"}
    api = alice.client.get(f"/v1/eval-runs/{base['id']}/compare/{head['id']}").json()
    assert totals["tokens"] == "tokens {base} {head} {delta}".format(**api["tokens"])
    assert totals["latency"] == "latency (ms) {base} {head} {delta}".format(**api["latency_ms"])


def test_the_action_wants_exactly_two_eval_runs(staff, two_runs):
    base, _ = two_runs
    changelist = reverse("admin:evals_evalrun_changelist")
    response = staff.post(changelist, {"action": "compare_selected",
                                       "_selected_action": [base["id"]]}, follow=True)
    assert "Select exactly two eval runs to compare." in response.content.decode()
    assert response.redirect_chain[-1][0].startswith(changelist)


def test_an_eval_run_page_links_to_the_comparison_with_the_one_before(staff, two_runs):
    base, head = two_runs
    page = staff.get(reverse("admin:evals_evalrun_change", args=[head["id"]])).content.decode()
    assert f'href="{compare_page(base["id"], head["id"])}"' in page
    first = staff.get(reverse("admin:evals_evalrun_change", args=[base["id"]])).content.decode()
    assert "/compare/" not in first


def test_another_tenant_s_eval_run_is_404_here_too(staff, client, two_runs, outsider,
                                                   make_agent):
    base, _ = two_runs
    theirs = start(outsider, make_suite(outsider, DEMO_CASE), make_agent(outsider))
    for pair in ((base["id"], theirs["id"]), (theirs["id"], base["id"]),
                 (base["id"], "not-a-uuid"), ("not-a-uuid", base["id"])):
        assert staff.get(compare_page(*pair)).status_code == 404, pair
    # A staff user who is no member of the tenant has no comparison to see.
    stranger = get_user_model().objects.create_superuser("lee@acme.test", "lee@acme.test", None)
    client.force_login(stranger)
    assert client.get(compare_page(base["id"], base["id"])).status_code == 404
