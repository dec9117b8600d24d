"""Which packages the tailcc distribution carries and where each one's source lives.

Everything else (name, version, dependencies, commands) is in pyproject.toml. Beside the
project's own packages the wheel ships two trees that are not Python packages of the
checkout's layout:

- ``p4``: P4Runtime 1.4.1's Python bindings generated for protobuf's upb runtime, from
  ``p4runtime_bindings/p4`` (written by ``python -m softswitch.devtools.p4runtime_stubs
  tree p4runtime_bindings``; tests/test_wheel_install.py checks they are what the generator
  makes). The tailcc distribution owns these modules in place of PyPI's ``p4runtime``.
- ``p4src``: the P4 programs and their includes as data, installed beside the packages
  (``site-packages/p4src``), where the commands look for tailcc.p4 and tailcc_nic.p4.
"""

from setuptools import find_namespace_packages, setup

# bench/ and ptf_tests/ are packages too: benchmarks, PTF suites and tests import each other
# by package name (bench.veth_switch, ptf_tests.tailcc_base), never through sys.path edits.
# Folders without an __init__.py (softswitch/p4include, p4src/include, ...) are data
# packages: their files ship by the patterns of DATA.
OWN = ["softswitch", "controlplane", "taillab", "topologies", "bench", "ptf_tests", "p4src"]
BINDINGS = ["p4", "p4.v1", "p4.config", "p4.config.v1"]
DATA = ["*.p4", "*.stf", "*.c", "*.yaml", "*.json", "*.txt"]

setup(
    packages=[*find_namespace_packages(include=[*OWN, *(f"{p}.*" for p in OWN)],
                                       exclude=["*.__pycache__"]),
              *BINDINGS],
    package_dir={name: "p4runtime_bindings/" + name.replace(".", "/") for name in BINDINGS},
    package_data={"": DATA},
)
