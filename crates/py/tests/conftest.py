"""Shared fixtures: the repository's scenarios."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def dumbbell() -> Path:
    return ROOT / "scenarios" / "dumbbell.toml"


@pytest.fixture
def root() -> Path:
    return ROOT
