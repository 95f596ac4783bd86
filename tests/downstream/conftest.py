"""The downstream engine's tests run on the plugin's vk_runtime without the online check unless
VKVERIFY_CHECK=1: they check the recorded stream at the end (assert_race_free), or not at all."""

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("VKVERIFY_CHECK", "0")


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("vkverify"):
        config.pluginmanager.register(importlib.import_module("vkverify.pytest_plugin"), "vkverify")
