"""Schemathesis against hango under gunicorn: the live OpenAPI schema, loaded from the running
server and called with a real key, every operation fuzzed (positive and negative data, a fixed
seed, derandomized, a few examples each); no response may be a 5xx, or have a status, a content
type or a body the schema does not document. ``bench/fuzz_api.py`` runs the same for longer."""

from __future__ import annotations

import pytest

from accounts.models import Role
from tests.support import workers
from tests.support.api import make_caller
from tests.support.fuzz import SERVER_ENV, fuzz, fuzz_config, seed_objects
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

# Per operation, for positive and for negative data.
MAX_EXAMPLES = 4
SEED = 20261201


@pytest.fixture
def server(transactional_db, tmp_path):
    server = GunicornProcess(tmp_path, database_url=workers.test_database_url(), env=SERVER_ENV)
    yield server
    server.stop()


def test_the_api_conforms_to_its_schema_under_fuzzing(tenant, server):
    owner = make_caller(tenant, "fuzz@acme.test", Role.OWNER)
    ids = seed_objects(server.url, owner.key)
    config = fuzz_config(key=owner.key, ids=ids, max_examples=MAX_EXAMPLES, seed=SEED)
    report = fuzz(f"{server.url}/v1/schema", config)
    print(report.summary())
    assert report.operations >= 37 and report.examples >= report.operations
    assert not report.errors, report.summary()
    assert not report.failures, report.summary() + "\n" + server.log()[-5000:]
