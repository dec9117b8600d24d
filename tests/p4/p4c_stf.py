"""Running an STF file under p4c's own BMv2 STF driver, the reference ``softswitch stf``
follows.

:func:`run` starts p4c's ``run-bmv2-test.py`` exactly as the bundle's ``bin/bmv2-stf``
does (compile with ``p4c-bm2-ss``, then ``simple_switch`` fed from pcap files and
programmed through ``simple_switch_CLI``), plus:

* ``-nc``, so the switch log (``switch.log.txt``) survives a pass too;
* optional simple_switch target options (tailcc runs with ``--priority-queues 8``);
* for an STF file that programs a table with range keys, which p4c's driver cannot do,
  ``p4c_stf_ranges.py`` (the unmodified driver plus range keys; see that file).

p4c's driver ignores ``check_counter`` (it logs "ignoring stf command"), so
:func:`counter_mismatches` checks the file's ``check_counter … packets OP N`` lines
against BMv2's own log: every ``count()`` of an indexed counter writes
``Updated counter 'NAME' at index I`` there.
"""

from __future__ import annotations

import json
import operator
import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RANGE_WRAPPER = HERE / "p4c_stf_ranges.py"
TIMEOUT_S = 600

_ADD_TABLE = re.compile(r"^\s*add\s+([\w.$\[\]]+)", re.IGNORECASE | re.MULTILINE)
_CHECK = re.compile(r"^\s*check_counter\s+([\w.$]+)\s*\(\s*(\d+)\s*\)\s*packets\s*"
                    r"(==|!=|<=|>=|<|>)\s*(\d+)", re.IGNORECASE | re.MULTILINE)
_UPDATED = re.compile(r"Updated counter '([^']+)' at index (\d+)")
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}


@dataclass
class P4cStfRun:
    ok: bool
    output: str                    # the driver's stdout + stderr
    switch_log: str                # BMv2's log; "" when the switch never started
    bmv2_json: dict | None         # what p4c-bm2-ss compiled
    seconds: float
    range_keys: bool               # ran through p4c_stf_ranges.py
    command: list[str] = field(default_factory=list)

    def excerpt(self, lines: int = 60) -> str:
        """The end of the driver's output and the switch log's errors, for a failure."""
        out = "\n".join(line for line in self.output.splitlines()
                        if not line.startswith("WARNING:"))
        errors = [line for line in self.switch_log.splitlines() if "[E]" in line]
        return ("$ " + " ".join(self.command) + "\n"
                + "\n".join(out.splitlines()[-lines:])
                + ("\nswitch log errors:\n" + "\n".join(errors[:lines]) if errors else ""))


def needs_range_keys(stf_text: str, range_tables: set[str]) -> bool:
    """The file adds an entry to one of ``range_tables`` (control-plane names of the
    tables with a range key), which p4c's driver cannot do even without a range value.
    Written names resolve as the driver resolves them: exact, else by suffix."""
    return any(name in range_tables or any(t.endswith(name) for t in range_tables)
               for name in _ADD_TABLE.findall(stf_text))


def driver_dir(tools) -> Path:
    return tools.bin_dir.parent / "share" / "p4c" / "bmv2-driver"


def driver_env(tools) -> dict[str, str]:
    """``bin/bmv2-stf``'s environment: the tools first on PATH, and a ``python3`` that
    imports thrift (``simple_switch_CLI`` runs ``/usr/bin/env python3``)."""
    env = tools.env()
    python_dir = str(Path(tools.python).parent)
    env["PATH"] = os.pathsep.join([str(tools.bin_dir), python_dir, "/usr/bin", env["PATH"]])
    return env


def run(tools, program: Path, stf: Path, workdir: Path, switch_args: tuple[str, ...] = (),
        range_tables: set[str] = frozenset()) -> P4cStfRun:
    """Run ``stf`` against ``program`` under p4c's BMv2 STF driver, in ``workdir``;
    through p4c_stf_ranges.py when it programs one of ``range_tables``."""
    workdir.mkdir(parents=True, exist_ok=True)
    drv = driver_dir(tools)
    range_keys = needs_range_keys(stf.read_text(), set(range_tables))
    args = [str(program.resolve()), "-tf", str(stf.resolve()), "-td", str(workdir),
            "-bd", str(drv / "builddir"), "--observation-log", str(workdir / "obs.txt"),
            "-b", "-nc"]
    args += [f"--target-specific-switch-arg={a}" for a in switch_args]
    if range_keys:
        command = [tools.python, str(RANGE_WRAPPER), str(drv), str(drv), *args]
    else:
        command = [tools.python, str(drv / "run-bmv2-test.py"), str(drv), *args]
    start = time.monotonic()
    # the driver makes its lock directories in the current directory
    proc = subprocess.run(command, cwd=workdir, env=driver_env(tools), capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    seconds = time.monotonic() - start
    logs = sorted(workdir.glob("tmp*/switch.log.txt"))
    jsons = sorted(workdir.glob(f"tmp*/{program.stem}.json"))
    return P4cStfRun(
        ok=proc.returncode == 0,
        output=proc.stdout + proc.stderr,
        switch_log=logs[0].read_text(errors="replace") if logs else "",
        bmv2_json=json.loads(jsons[0].read_text()) if jsons else None,
        seconds=seconds,
        range_keys=range_keys,
        command=command)


def counter_mismatches(stf_text: str, result: P4cStfRun) -> list[str]:
    """The ``check_counter NAME(I) packets OP N`` lines of ``stf_text`` that BMv2's log
    contradicts (names resolve as the driver resolves table names: exact, then suffix)."""
    if result.bmv2_json is None:
        return ["no BMv2 JSON: the program did not compile"]
    names = [c["name"] for c in result.bmv2_json.get("counter_arrays", [])]
    counts = Counter((name, int(index)) for name, index in _UPDATED.findall(result.switch_log))
    problems = [f"cannot check on BMv2 (only NAME(INDEX) packets OP N): {line.strip()}"
                for line in stf_text.splitlines()
                if line.strip().lower().startswith("check_counter") and not _CHECK.match(line)]
    for written, index, op, value in _CHECK.findall(stf_text):
        found = [n for n in names if n == written] or [
            n for n in names if n.endswith("." + written)]
        if len(found) != 1:
            problems.append(f"check_counter {written}: {len(found)} counters match "
                            f"({', '.join(found) or 'none'})")
            continue
        got = counts[(found[0], int(index))]
        if not _OPS[op](got, int(value)):
            problems.append(f"check_counter {written}({index}) packets {op} {value}: BMv2's "
                            f"log has {got} update(s) of {found[0]}[{index}]")
    return problems
