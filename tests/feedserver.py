"""The feed server moved into the test kit (host/testing/feedserver.py); this name stays for the tests."""

from host.testing.feedserver import *  # noqa: F403
from host.testing.feedserver import __all__ as __all__
