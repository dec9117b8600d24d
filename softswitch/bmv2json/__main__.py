"""``python -m softswitch.bmv2json PROG.json [--stf TEST.stf] [--p4]``.

Loads p4c's BMv2 JSON as softswitch does. With ``--p4`` prints the P4_16 program the
document becomes; with ``--stf`` runs an STF test on the loaded switch and prints its
report. An unloadable document prints its located error; the exit status is 1 on an
error or a failed test.
"""

from __future__ import annotations

import argparse
import sys

from softswitch import bmv2json
from softswitch.diagnostics import P4Error


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m softswitch.bmv2json")
    ap.add_argument("json", help="p4c-bm2-ss's output (PROG.json)")
    ap.add_argument("--stf", help="an STF test to run on the loaded switch")
    ap.add_argument("--p4", action="store_true", help="print the program the JSON becomes")
    ap.add_argument("--priority-queues", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        if args.p4:
            print(bmv2json.to_p4(args.json), end="")
        if args.stf:
            result = bmv2json.run_stf(args.json, args.stf, args.priority_queues)
            print(result.report)
            return 0 if result.ok else 1
        if not args.p4:
            bmv2json.load_program(args.json)
            print(f"{args.json}: loads")
    except P4Error as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
