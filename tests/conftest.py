"""Shared fixtures.

``reference_tools``: real p4c and BMv2 (see ``softswitch/reference_tools.py``), installed
from ``../shared/p4lang`` when the bundle is there. Without them a test skips and says
how to get them; under CI (``CI=true``) it fails instead, so CI always covers both
targets.
"""

from __future__ import annotations

import pytest

from softswitch import reference_tools as rt


@pytest.fixture(scope="session")
def reference_tools() -> rt.ReferenceTools:
    tools = rt.ensure()
    if tools is None:
        if rt.required():
            pytest.fail(f"CI=true: {rt.missing_reason()}")
        pytest.skip(rt.missing_reason())
    return tools
