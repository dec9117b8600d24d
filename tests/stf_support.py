"""The STF helpers of ``tests/p4/`` (``p4c_stf.py``, ``gen_tailcc_stf.py``) as modules.

That folder is named like P4Runtime's ``p4`` package, so its files cannot be imported by
name: each is loaded from its file once, under its own name, and registered in
``sys.modules`` (dataclasses look their module up there).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

STF_DIR = Path(__file__).resolve().parent / "p4"


def stf_module(name: str) -> ModuleType:
    """``tests/p4/NAME.py`` as the module ``NAME``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, STF_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
