"""MkDocs hooks (``mkdocs.yml``, ``hooks:``): the pages written when the site is built.

- ``operations/configuration.md``: the configuration reference, from ``HangoSettings``
  (``tools/config_reference.py``);
- ``api/<tag>.md``: the API reference, from the OpenAPI schema ``/v1/schema`` serves
  (``tools/api_reference.py``);
- ``benchmarks.md``: ``bench/README.md`` as it is, the one home of measured figures.

Generated, they can never drift from the code; ``mkdocs.yml``'s nav names each one, so a page
missing from it (a new tag of the API) fails the strict build.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# The settings and the schema need no database: an in-memory SQLite one is never opened.
os.environ.setdefault("DATABASE_URL", "sqlite:///:memory:")

from tools import api_reference, config_reference  # noqa: E402


def on_files(files: Files, config: Any) -> Files:
    generated = {
        "operations/configuration.md": config_reference.page(),
        "benchmarks.md": (ROOT / "bench" / "README.md").read_text(),
    }
    for name, text in api_reference.pages(api_reference.schema()).items():
        generated[f"api/{name}"] = text
    for src_uri, content in generated.items():
        files.append(File.generated(config, src_uri, content=content))
    return files
