"""What the tests of the many-picture commands share: one local Ray instance."""

import logging

import pytest


@pytest.fixture(scope="session")
def ray_instance():
    """One local Ray instance for the session (starting one takes seconds; a module scope started it
    again whenever pytest-xdist gave this worker a test from another module in between)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'ironlearn[ray]' (CI installs it)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()
