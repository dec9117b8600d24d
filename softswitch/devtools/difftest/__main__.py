"""``python -m softswitch.devtools.difftest [--seed S] [--count N] [--jobs J] [--keep DIR]
[--generated SHARE]``.

Mutates the corpus' small v1model programs and tests/p4/frontend's and generates small
programs of its own (softswitch.devtools.difftest.generate); ``--arch pna``: the PNA corpus'
programs and tests/p4/pna's, checked with ``p4test --arch pna``. Compiles every one
with p4test and softswitch, prints each disagreement and a summary; exit status 1
when a disagreement is not in the known list (tests/differential_known.txt).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from softswitch.devtools import conformance, reference_tools
from softswitch.devtools.difftest import run as R


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m softswitch.devtools.difftest",
                                 description="Differential test: softswitch vs p4test.")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--corpus", help="corpus directory (default: the conformance corpus)")
    ap.add_argument("--only", help="only seed programs whose name contains this")
    ap.add_argument("--arch", choices=("v1model", "pna"), default="v1model",
                    help="seed set and p4test --arch (pna: the PNA corpus and tests/p4/pna)")
    ap.add_argument("--keep", type=Path, help="keep the mutants (and p4test's P4Info) here")
    ap.add_argument("--known", type=Path, default=R.DEFAULT_KNOWN)
    ap.add_argument("--results", type=Path, default=conformance.REPO_ROOT / "out" /
                    "difftest-results.json")
    ap.add_argument("--all", action="store_true", help="print documented disagreements too")
    ap.add_argument("--generated", type=float, default=R.GENERATED_SHARE, metavar="SHARE",
                    help="share of generated programs, 0..1 (the rest are mutants; "
                    f"default {R.GENERATED_SHARE})")
    args = ap.parse_args(argv)

    tools = reference_tools.find()
    if tools is None:
        print(f"error: {reference_tools.missing_reason()}", file=sys.stderr)
        return 2
    corpus = conformance.corpus_dir(args.corpus)
    pna = args.arch == "pna"
    sources = R.pna_sources(corpus) if pna else R.default_sources(corpus)
    if args.only:
        sources = [s for s in sources if args.only in s[0]]
    if not 0.0 <= args.generated <= 1.0:
        print(f"error: --generated {args.generated}: expected a share from 0 to 1",
              file=sys.stderr)
        return 2
    if not sources and args.generated < 1.0:
        print("error: no seed programs (use --generated 1 to run generated ones only)",
              file=sys.stderr)
        return 2
    known = R.read_known(args.known)

    def progress(case: R.Case) -> None:
        if case.kind in R.DISAGREEMENTS or case.kind == "p4test-crash":
            doc = R.explain(case, known)
            if doc is None or args.all:
                tag = f"known: {doc.reason}" if doc else (
                    "no reference verdict" if case.kind == "p4test-crash" else "UNDOCUMENTED")
                print(f"[{case.index}] {tag}: {case.summary()}", flush=True)

    start = time.monotonic()
    cases = R.run(sources, args.seed, args.count, tools.p4test, tools.exe("p4c-bm2-ss"),
                  args.jobs, args.keep, progress, arch="pna" if pna else None,
                  generated_share=args.generated)
    R.write_results(args.results, cases, known)
    print(R.summarize(cases, known) + f" ({time.monotonic() - start:.0f} s, seed {args.seed};"
          f" results in {args.results})")
    return 1 if R.undocumented(cases, known) else 0


if __name__ == "__main__":
    sys.exit(main())
