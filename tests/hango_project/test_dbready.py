"""hango_project.dbready: a database not created yet is one clear error of ``migrate``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.support import workers

pytestmark = pytest.mark.django_db


def test_migrate_on_a_database_not_created_says_how_to_create_it():
    missing = f"{connection.settings_dict['NAME']}_never_created"
    server = workers.test_database_url().rsplit("/", 1)[0]
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"],
                          cwd=workers.ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "DATABASE_URL": f"{server}/{missing}"})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert f'database "{missing}" does not exist' in done.stderr
    db = connection.settings_dict
    createdb = f"createdb -h {db['HOST']} -p {db['PORT']} -U {db['USER']} {missing}"
    assert f"HINT: Create it first: {createdb}" in done.stderr
