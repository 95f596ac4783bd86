"""Loads vkverify's pytest plugin where vkverify is not pip-installed (its pytest11 entry point then
does it), and lets the tests import engine.py."""

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("vkverify"):
        config.pluginmanager.register(importlib.import_module("vkverify.pytest_plugin"), "vkverify")
