"""p4c's BMv2 STF driver, plus the one thing it lacks for tailcc: range-match keys.

Usage (the arguments of p4c's ``run-bmv2-test.py``, after the driver's directory)::

    python p4c_stf_ranges.py DRIVER_DIR DRIVER_DIR PROG.p4 -tf TEST.stf -td OUT -bd ... -b

p4c's driver (``bmv2stf.py``, p4c 1.2.5.16 and every earlier version) cannot add an entry
to a table with a ``range`` key: its grammar has no range syntax, ``TableKeyInstance``
raises ``Unexpected key type range`` for such a table even when the entry leaves the
range keys out, and ``parse_table_add`` gives ``simple_switch_CLI`` a priority only for
tables whose BMv2 match type is ``ternary`` (a table with a range key is ``range``, and
BMv2 needs a priority there too). tailcc's ``traffic_class`` has five range keys, so
without this every STF file that classifies traffic fails on BMv2 before a packet is
sent. This script imports the unmodified driver, adds exactly those three things, and
runs the driver's own ``run-bmv2-test.py`` — nothing else of the driver changes:

* ``KEY:LOW..HIGH`` (softswitch's STF range syntax) is ``LOW->HIGH`` for
  ``simple_switch_CLI``;
* a range key an entry leaves out matches everything (``0->2**width-1``, the width from
  the BMv2 JSON), as softswitch's ``default_key_match`` does;
* a range table's entry gets the priority a ternary table's gets (``10000 - PRIO``, so a
  higher STF priority wins on both targets).

The parse tables of the extended grammar are built in memory (``write_tables=False``):
nothing is written into the installed driver.
"""

from __future__ import annotations

import importlib.util
import re
import runpy
import sys
from pathlib import Path
from types import ModuleType


def _field_widths(bmv2_json: dict) -> dict[tuple[str, str], int]:
    """(header instance, field) -> width, for every field of the BMv2 JSON."""
    types = {t["name"]: {f[0]: f[1] for f in t["fields"]} for t in bmv2_json["header_types"]}
    return {(h["name"], field): width
            for h in bmv2_json["headers"]
            for field, width in types.get(h["header_type"], {}).items()}


def _load(driver_dir: Path, name: str) -> ModuleType:
    """The driver's module or package ``name`` from ``driver_dir`` (not on the path),
    registered in ``sys.modules``, where the driver's own imports of it find it."""
    folder = driver_dir / name
    if folder.is_dir():                 # tools/: a package folder without __init__.py
        module = ModuleType(name)
        module.__path__ = [str(folder)]
        sys.modules[name] = module
        return module
    spec = importlib.util.spec_from_file_location(name, driver_dir / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def install(driver_dir: Path) -> None:
    """Patch the driver module ``bmv2stf`` (loaded from ``driver_dir``) in place."""
    _load(driver_dir, "tools")
    bmv2stf = _load(driver_dir, "bmv2stf")
    import ply.yacc as yacc

    class RangeStfParser(bmv2stf.Bmv2StfParser):
        # ply takes the rule defined first as the start symbol; this file's would be
        start = "statements"

        def __init__(self) -> None:
            self.lexer = bmv2stf.BMv2StfLexer()
            self.lexer.build(reflags=re.UNICODE)
            self.tokens = self.lexer.tokens
            self.parser = yacc.yacc(module=self, write_tables=False, debug=False)
            self.errors_cnt = 0

        def p_number_or_range(self, p):
            "number_or_lpm : number DOT DOT number"
            p[0] = f"{p[1]}->{p[4]}"

    bmv2stf.Bmv2StfParser = RangeStfParser

    original_init = bmv2stf.TableKeyInstance.__init__

    def key_instance_init(self, table_key) -> None:
        ranges = {f: t for f, t in table_key.fields.items() if t == "range"}
        for field in ranges:
            table_key.fields[field] = "exact"      # hide them from the original
        try:
            original_init(self, table_key)
        finally:
            table_key.fields.update(ranges)
        for field in ranges:
            self.values[field] = f"0->{(1 << table_key.widths[field]) - 1}"

    bmv2stf.TableKeyInstance.__init__ = key_instance_init

    original_read_json = bmv2stf.RunBMV2.readJson

    def read_json(self) -> None:
        original_read_json(self)
        widths = _field_widths(self.json)
        pipelines = self.json["pipelines"][0]["tables"] + self.json["pipelines"][1]["tables"]
        for table, json_table in zip(self.tables, pipelines, strict=True):
            table.key.widths = {
                name: widths.get(tuple(k["target"]), 0)
                for name, k in zip(table.key.fields, json_table["key"], strict=True)}

    bmv2stf.RunBMV2.readJson = read_json

    original_add = bmv2stf.RunBMV2.parse_table_add

    def parse_table_add(self, cmd):
        command = original_add(self, cmd)
        if self.tableByName(cmd[1]).match_type == "range":
            if cmd[2] is None:
                raise Exception(f"table {cmd[1]} has range keys: its entries need a priority")
            command += f" {10000 - int(cmd[2])}"
        return command

    bmv2stf.RunBMV2.parse_table_add = parse_table_add


def main() -> None:
    driver_dir = Path(sys.argv[1])
    install(driver_dir)
    script = driver_dir / "run-bmv2-test.py"
    sys.argv = [str(script), *sys.argv[2:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
