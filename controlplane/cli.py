"""``tailcc``: operator intent -> P4Runtime, and a look at what the switches do.

Every error a user can cause (bad intent, bad argument, unreachable switch, refused
write) ends as one or more ``tailcc: error: …`` lines and a non-zero exit status, never
a Python traceback: 1 for failures, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from controlplane.commands import (
    intent_cmds,
    interactive,
    lab,
    observe,
    runtime_json,
    state,
    table,
)
from controlplane.commands.target import UsageError
from controlplane.compile import CompileError
from controlplane.intent import IntentError
from controlplane.p4rt.errors import P4RuntimeClientError

# The switch program shipped with the package (site-packages/p4src, or the checkout's).
TAILCC_P4 = Path(__file__).resolve().parents[1] / "p4src" / "tailcc.p4"

# Every subcommand module, in the order ``tailcc --help`` lists them: each has
# ``add_parsers(sub)``.
COMMAND_MODULES = (intent_cmds, table, state, runtime_json, observe, interactive, lab)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


class _VersionAction(argparse.Action):
    """``--version``: one line, unwrapped (a path must stay whole), then exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        print(_version())
        parser.exit(0)


def _version() -> str:
    """``tailcc --version``: the distribution's version and the shipped tailcc.p4."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("tailcc")
    except PackageNotFoundError:
        release = "(not installed)"
    return f"tailcc {release}; tailcc.p4: {TAILCC_P4}"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tailcc", description="tailcc controller: turn intent (traffic "
                "classes, queues, ECN, Fast CNP, segmentation, routes) into P4Runtime "
                "writes on every switch, and inspect the switches.")
    p.add_argument("--version", action=_VersionAction, nargs=0,
                   help="print the version and where the shipped tailcc.p4 is")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in COMMAND_MODULES:
        module.add_parsers(sub)
    p.set_defaults(root_parser=p)  # what `tailcc completion` describes
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except IntentError as exc:
        for problem in exc.problems:
            print(problem.format(exc.source), file=sys.stderr)
        print(f"tailcc: error: {len(exc.problems)} problem(s) in the intent",
              file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"tailcc: error: {exc}", file=sys.stderr)
        return 2
    except (P4RuntimeClientError, CompileError) as exc:
        print(f"tailcc: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tailcc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the promise: never a traceback
        print(f"tailcc: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
