import pytest

import clgrad as cg


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    cg.manual_seed(0)
