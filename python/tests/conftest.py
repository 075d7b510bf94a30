"""Shared fixtures of the tnpu Python tests (Documentation/python.md, "Tests")."""
import os

import numpy as np
import pytest

import tnpu


@pytest.fixture(scope="module")
def dev():
    """The device under test: $ACCEL_DEVICE (the meson test sets sim; the VM, /dev/accel/accel0)."""
    with tnpu.Device(os.environ.get("ACCEL_DEVICE", "sim")) as d:
        yield d


@pytest.fixture
def rng():
    return np.random.default_rng(18)
