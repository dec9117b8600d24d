"""``tailcc``: operator intent -> P4Runtime, and a look at what the switches do.

Every error a user can cause (bad intent, bad argument, unreachable switch, refused
write) ends as one or more ``tailcc: error: …`` lines and a non-zero exit status, never
a Python traceback: 1 for failures, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controlplane.commands import intent_cmds, state, table
from controlplane.commands.target import UsageError
from controlplane.compile import CompileError
from controlplane.intent import IntentError
from controlplane.p4rt.errors import P4RuntimeClientError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tailcc", description="tailcc controller: turn intent (traffic "
                "classes, queues, ECN, Fast CNP, segmentation, routes) into P4Runtime "
                "writes on every switch, and inspect the switches.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    intent_cmds.add_parsers(sub)
    table.add_parsers(sub)
    state.add_parsers(sub)
    _add_optional_commands(sub)
    return p


def _add_optional_commands(sub: argparse._SubParsersAction) -> None:
    """Commands added in later slices register here."""
    from controlplane.commands import interactive, observe, runtime_json

    runtime_json.add_parsers(sub)
    observe.add_parsers(sub)
    interactive.add_parsers(sub)


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
