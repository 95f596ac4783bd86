from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.json"))
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


@pytest.fixture
def root() -> Path:
    return ROOT
