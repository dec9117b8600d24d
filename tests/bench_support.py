"""Import a benchmark script of ``bench/`` as a module for tests."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> ModuleType:
    """``bench/NAME.py`` as ``bench.NAME`` (``bench`` is a package of the install, so the
    scripts' imports of each other resolve as they do when ``make bench`` runs them)."""
    return importlib.import_module(f"bench.{name}")
