from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.json"))
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def device_name() -> str:
    """The Vulkan device the runtime tests run on; they skip, saying why, where there is none."""
    runtime = pytest.importorskip("vkverify.runtime")
    try:
        with runtime.Runtime() as rt:
            return rt.device.name
    except runtime.NoDevice as error:
        pytest.skip(f"no Vulkan ICD: {error}")
