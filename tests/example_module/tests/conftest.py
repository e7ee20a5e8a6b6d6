"""The example module's tests run where it is pip-installed (its own venv) and from the host's checkout,
where its package is put on the path and its entry point registered for these tests only, as pip would."""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from host.testing import module_installed

try:
    importlib.metadata.distribution("feedeater-example")
    INSTALLED = True
except importlib.metadata.PackageNotFoundError:
    INSTALLED = False
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # the distribution's root


@pytest.fixture(scope="module", autouse=True)
def example_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Registered for this test file only: the host's other tests run without the example."""
    if INSTALLED:
        yield
        return
    with module_installed(tmp_path_factory.mktemp("site"), "example", "feedeater_example:MODULE"):
        yield
