"""``softswitch`` command line: a drop-in for ``p4c`` (compile) and BMv2's tools (stf).

Exit codes follow p4c: 0 success, 1 the user's input has errors (diagnostics printed as
``file:line:col: error: message``), 2 an internal error of softswitch (a bug: reported
in one line, with the traceback only when ``SOFTSWITCH_DEBUG=1``, which also keeps the
generated C of the fast path beside its build: ``softswitch.fastpath.build``). No Python
traceback reaches a user otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from softswitch.diagnostics import P4Error
from softswitch.memory import allocator

# The P4 programs shipped with the package (site-packages/p4src beside softswitch/, or the
# checkout's p4src/): `softswitch --version` says where.
P4SRC = Path(__file__).resolve().parents[1] / "p4src"

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that reports usage errors in p4c's style and exit code."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)


def _parse_defines(items: Sequence[str]) -> dict[str, str]:
    defines: dict[str, str] = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name:
            raise P4Error(f"-D {item!r}: expected NAME or NAME=VALUE")
        defines[name] = value if "=" in item else "1"
    return defines


class _VersionAction(argparse.Action):
    """``--version``: one line, unwrapped (a path must stay whole), then exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        print(_version())
        parser.exit(0)


def _version() -> str:
    """``softswitch --version``: the tailcc distribution's version and where its P4
    programs are."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("tailcc")
    except PackageNotFoundError:
        release = "(not installed)"
    return f"softswitch (tailcc) {release}; P4 programs: {P4SRC}"


def _add_program_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", help="P4_16 source file")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include path")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]",
                   help="define a preprocessor macro")


def _cmd_compile(args: argparse.Namespace) -> int:
    from softswitch.frontend import limits as limits_mod
    from softswitch.frontend.compiler import compile_program
    from softswitch.frontend.preprocess import P4INCLUDE_DIR

    if args.target not in ("bmv2", "softswitch"):
        raise P4Error(f"--target {args.target}: only bmv2 (v1model) is supported")
    from softswitch.architecture import ARCHITECTURES

    if args.arch is not None and args.arch not in ARCHITECTURES:
        raise P4Error(f"--arch {args.arch}: softswitch supports {', '.join(ARCHITECTURES)}")
    limits = limits_mod.from_arguments(args)
    named = [os.path.dirname(os.path.abspath(args.program)), *args.include_dirs,
             str(P4INCLUDE_DIR)]
    try:
        with limits_mod.process_limits(limits), limits_mod.applied(limits):
            checked = compile_program(args.program, args.include_dirs,
                                      _parse_defines(args.defines))
    except P4Error as err:
        err.diagnostics = limits_mod.redact(err.diagnostics, named)
        raise
    _require_main(checked, args.program)
    from softswitch.architecture import detect
    from softswitch.frontend.elaborate import elaborate

    detect(elaborate(checked), args.arch)   # --arch must agree with main's package
    for warning in limits_mod.redact(list(getattr(checked, "warnings", [])), named):
        print(warning, file=sys.stderr)
    if args.output:
        _write_artifact(args)
    if args.p4runtime_files:
        from softswitch import p4info

        info = p4info.generate(checked, args.arch)
        for path in args.p4runtime_files.split(","):
            _ensure_parent(path)
            p4info.write(info, path)
    return EXIT_OK


def _write_artifact(args: argparse.Namespace) -> None:
    """``-o``: the device config to push with SetForwardingPipelineConfig (or to give
    ``softswitch run``): the program with its local includes and defines, as JSON. Like
    p4c, ``-o DIR`` writes ``DIR/<program>.json``; like p4c-bm2-ss, ``-o FILE.json`` or
    any path that exists and is not a directory (``/dev/null``) is the file written."""
    from softswitch.p4runtime.pipeline import make_artifact

    out = args.output
    if os.path.isdir(out) or not (out.endswith(".json") or os.path.exists(out)):
        stem = os.path.splitext(os.path.basename(args.program))[0]
        out = os.path.join(out, stem + ".json")
    _ensure_parent(out)
    data = make_artifact(args.program, _parse_defines(args.defines)).to_bytes()
    try:
        with open(out, "wb") as f:
            f.write(data)
    except OSError as err:
        raise P4Error(f"-o {args.output}: cannot write {out}: {err.strerror}") from None


def _require_main(checked: object, program: str) -> None:
    """The bmv2 back end needs a top-level ``main`` package instance (p4c-bm2-ss stops
    without one); the front end alone accepts library-only files."""
    from softswitch.diagnostics import SourceLoc
    from softswitch.frontend import ast

    decls = getattr(getattr(checked, "program", None), "decls", [])
    if not any(isinstance(d, ast.InstanceDecl) and d.name == "main" for d in decls):
        raise P4Error("no 'main' package instance: the bmv2 target needs "
                      "'V1Switch(...) main;'", SourceLoc(program, 1, 1))


def _ensure_parent(path: str) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)


def _cmd_stf(args: argparse.Namespace) -> int:
    from softswitch.stf import run_stf

    if not 1 <= args.priority_queues <= 8:
        raise P4Error(f"--priority-queues must be 1..8, not {args.priority_queues}")
    result = run_stf(args.program, args.stf, args.include_dirs, _parse_defines(args.defines),
                     priority_queues=args.priority_queues)
    for note in getattr(result, "warnings", ()):
        print(note, file=sys.stderr)
    report = getattr(result, "report", "")
    if report:
        print(report)
    if result.ok:
        print(f"PASS {args.stf}")
        return EXIT_OK
    print(f"FAIL {args.stf}", file=sys.stderr)
    return EXIT_USER_ERROR


def _cmd_cli(args: argparse.Namespace) -> int:
    from softswitch.daemon.cli_channel.commands import run_commands

    commands: Iterable[str]
    if args.commands:
        commands = list(args.commands)
    elif args.file and args.file != "-":
        try:
            with open(args.file, encoding="utf-8") as f:
                commands = f.read().splitlines()
        except OSError as err:
            raise P4Error(f"cannot read {args.file}: {err.strerror}") from None
    else:
        # line by line, as they come: a controller may keep the pipe open and write
        # changes over time (simple_switch_CLI reads its stdin the same way)
        commands = (line.rstrip("\n") for line in sys.stdin)
    token = None
    if args.token_file:
        from softswitch.daemon.cli_channel.commands import read_token

        try:
            token = read_token(args.token_file)
        except OSError as err:
            raise P4Error(f"--token-file {args.token_file}: {err.strerror}") from None
        except ValueError as err:
            raise P4Error(f"--token-file: {err}") from None
    return run_commands(args.host, args.port, commands, token=token, unix_path=args.socket)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="softswitch",
        description="A P4_16 compiler front end and BMv2-compatible v1model target: a drop-in "
                    "for p4c (compile) and simple_switch_grpc (run), with an STF runner.")
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="print the version and where the shipped P4 programs are")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)

    c = sub.add_parser("compile", help="compile a P4_16 program (p4c-compatible flags)")
    _add_program_args(c)
    c.add_argument("--target", default="bmv2", help="target (bmv2)")
    c.add_argument("--arch", default=None,
                   help="architecture: v1model or pna (default: from main's package, "
                        "V1Switch or PNA_NIC; given, it must match)")
    c.add_argument("--std", default="p4-16", choices=["p4-16", "p4_16"], help="language")
    c.add_argument("-o", dest="output", metavar="DIR|FILE.json",
                   help="write the device config (softswitch's JSON artifact, pushed with "
                        "SetForwardingPipelineConfig or run by 'softswitch run')")
    c.add_argument("--p4runtime-files", metavar="FILES",
                   help="comma-separated P4Info outputs; format by extension "
                        "(.txt/.txtpb text, .bin binary, .json JSON)")
    from softswitch.frontend import limits as limits_mod

    limits_mod.add_arguments(c)
    c.set_defaults(func=_cmd_compile)

    s = sub.add_parser("stf", help="run an STF packet test against a program")
    _add_program_args(s)
    s.add_argument("stf", help="STF test file")
    s.add_argument("--priority-queues", type=int, default=1, metavar="N",
                   help="queues per egress port, as simple_switch's option (default 1, as "
                        "p4c's STF driver starts it): a packet whose standard_metadata."
                        "priority is >= N is dropped")
    s.set_defaults(func=_cmd_stf)
    r = sub.add_parser("cli", help="runtime commands to a running switch "
                                   "(simple_switch_CLI language: table_*, mirroring_*, mc_*, "
                                   "counter_*, register_*, set_queue_rate/depth, …)")
    r.add_argument("--host", default="127.0.0.1", help="switch address (127.0.0.1)")
    r.add_argument("--port", type=int, default=9090,
                   help="the switch's runtime port (softswitch run --thrift-port; 9090)")
    r.add_argument("--socket", metavar="PATH",
                   help="the switch's runtime Unix socket (softswitch run --runtime-socket) "
                        "instead of --host/--port")
    r.add_argument("--token-file", metavar="FILE",
                   help="send the token in FILE first (softswitch run --runtime-token-file)")
    r.add_argument("-c", dest="commands", action="append", metavar="CMD",
                   help="a command (repeatable); otherwise FILE or standard input")
    r.add_argument("file", nargs="?", help="file of commands, one per line ('-': stdin)")
    r.set_defaults(func=_cmd_cli, program="softswitch cli")
    for name, (_module, help_text) in _PASSTHROUGH.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _run_guarded(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; user errors become diagnostics, bugs become one-line reports."""
    try:
        return func(args)
    except P4Error as err:
        print(err, file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except RecursionError:
        where = getattr(args, "program", "softswitch")
        print(f"{where}: error: program nests too deeply for softswitch", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback
        where = getattr(args, "program", "softswitch")
        print(f"{where}: error: internal compiler error: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        if os.environ.get("SOFTSWITCH_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL_ERROR


# Commands with their own simple_switch-style command lines (including options after
# ``--``): the rest of argv goes to them untouched.
_PASSTHROUGH = {
    "run": ("softswitch.daemon.main", "run a program on network interfaces (simple_switch_grpc)"),
}


def _passthrough(command: str, rest: list[str]) -> int:
    import importlib

    module = importlib.import_module(_PASSTHROUGH[command][0])
    ns = argparse.Namespace(program=f"softswitch {command}")
    return _run_guarded(lambda _args: module.main(rest), ns)


def _system_allocator() -> None:
    """``softswitch run`` is a long-running server: re-execute this very command line
    once on the C allocator :mod:`softswitch.memory.allocator` chooses (jemalloc where
    installed, else glibc), whose freed memory the reclaimer can give back, rather than
    pymalloc. A ``PYTHONMALLOC`` the user sets keeps this process as it is."""
    env = allocator.server_environment(os.environ)
    argv = list(getattr(sys, "orig_argv", []))
    if env is None or not argv:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, argv, env)
    except OSError:
        return                                      # carry on with pymalloc


def _exit_now(code: int) -> NoReturn:
    """End ``softswitch run`` once it has stopped: its sockets, pcap files and logs are
    closed by then, and the interpreter's teardown only delays the exit (long, with a
    large Write abandoned mid-way: its request and gRPC's core are torn down object by
    object), which a supervisor restarting the switch waits for."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _PASSTHROUGH:
        if argv[0] == "run" and from_command_line:
            from softswitch.daemon.rpc import settings

            settings.configure()             # before gRPC starts (and kept by the re-exec)
            _system_allocator()
            _exit_now(_passthrough(argv[0], argv[1:]))
        return _passthrough(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    return _run_guarded(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
