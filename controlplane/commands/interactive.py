"""``tailcc shell`` and ``tailcc completion``: the operator's interactive tools.

``shell`` hands a switch of the intent to p4runtime-shell (the P4 tutorials' IPython
P4Runtime shell) with the intent's address, device id and election id filled in, so
an operator debugging one switch does not retype what the intent already says.
``completion`` prints a bash or zsh completion script generated from tailcc's own
argparse tree, so it can never drift from the commands that exist.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from controlplane.commands.target import (
    Target,
    UsageError,
    add_address_args,
    positive_float,
    resolve_target,
)
from controlplane.p4rt.client import CHANNEL_OPTIONS
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.tls import TlsConfig


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("shell", help="p4runtime-shell (IPython) on a switch of the intent",
                       description="Start p4runtime-shell against a switch: its address, "
                       "device id and election id come from the intent (or --address). "
                       "The P4Info is the switch's own; a switch without a pipeline needs "
                       "--pipeline (e.g. p4src/tailcc.p4), which is pushed first. Commands "
                       "may also be fed on stdin (one per line).")
    s.add_argument("switch", nargs="?", metavar="SWITCH",
                   help="switch name in the intent (optional if it has only one)")
    s.add_argument("--intent", "-i", metavar="FILE", help="intent file naming the switch")
    add_address_args(s, "P4Runtime address instead of an intent",
                     "P4Runtime device id (default: the intent's, else 1)",
                     "election id (default: the intent's, else 1); use a higher one "
                     "than a running `tailcc apply --every` to become primary")
    s.add_argument("--pipeline", metavar="FILE",
                   help="P4 program (softswitch) or BMv2 JSON to push first")
    s.add_argument("--p4info", metavar="FILE", help="P4Info of --pipeline (default: "
                   "compiled from the .p4)")
    s.add_argument("--timeout", type=positive_float, default=10.0,
                   help="seconds to wait for the switch (10)")
    s.set_defaults(func=cmd_shell)

    c = sub.add_parser("completion", help="print a shell completion script",
                       description="Print a completion script for bash or zsh, e.g. "
                       "`source <(tailcc completion bash)` or `tailcc completion zsh > "
                       "~/.zfunc/_tailcc`.")
    c.add_argument("shell", choices=("bash", "zsh"), help="bash or zsh")
    c.set_defaults(func=cmd_completion)


# --- shell ------------------------------------------------------------------------------
def _shell_target(args: argparse.Namespace) -> Target:
    ns = argparse.Namespace(**{k: getattr(args, k, None) for k in (
        "address", "intent", "switch", "device_id", "election_id", "tls", "tls_ca",
        "tls_cert", "tls_key", "tls_server_name")})
    return resolve_target(ns)


def _shell_tls(tls: TlsConfig) -> list[str]:
    """p4runtime-shell's TLS options for the same files (it has no server-name option)."""
    if tls.server_name:
        raise P4RuntimeClientError("tailcc shell: p4runtime-shell cannot check the switch's "
                                   "certificate against another name (tls.server_name)")
    argv = ["--ssl"]
    for flag, path in (("--cacert", tls.ca), ("--cert", tls.cert), ("--private-key", tls.key)):
        if path is not None:
            argv += [flag, str(path)]
    return argv


def shell_argv(args: argparse.Namespace, workdir: Path) -> list[str]:
    """p4runtime-shell's own command line for this switch. Checks first, with tailcc's
    client, that the switch answers and has (or will get) a pipeline, because
    p4runtime-shell reports those cases with a traceback or by hanging."""
    target = _shell_target(args)
    client = target.client(args.timeout)
    try:
        client.connect(require_primary=False)
        loaded = client.get_p4info() is not None
    finally:
        client.close()
    argv = ["--grpc-addr", target.address, "--device-id", str(target.device_id),
            "--election-id", f"{target.election_id >> 64},{target.election_id & (2**64 - 1)}"]
    if target.tls is not None:
        argv += _shell_tls(target.tls)
    if args.pipeline:
        from google.protobuf import text_format

        from controlplane.reconcile import load_pipeline

        pipeline = load_pipeline(args.p4info, args.pipeline)
        assert pipeline is not None
        info, binary = workdir / "p4info.txtpb", workdir / "device_config.bin"
        info.write_text(text_format.MessageToString(pipeline.p4info))
        binary.write_bytes(pipeline.device_config)
        argv += ["--config", f"{info},{binary}"]
    elif not loaded:
        raise P4RuntimeClientError(f"{target.address}: no pipeline is loaded; pass "
                                   "--pipeline (e.g. p4src/tailcc.p4) to push one")
    return argv


class _GrpcWithLimits:
    """``grpc`` as p4runtime-shell's client sees it: the same module, except that the
    channels it opens take the controller's limits (:data:`CHANNEL_OPTIONS`).

    p4runtime-shell opens its channel with gRPC's defaults, so in the shell a Read of a
    BMv2 table over 4 MiB (~70k routes: BMv2 answers a Read in one message) would fail
    with RESOURCE_EXHAUSTED; it offers no way to pass channel options."""

    def __getattr__(self, name: str) -> Any:
        return getattr(grpc, name)

    @staticmethod
    def insecure_channel(target: str, options: Any = None, **kw: Any) -> grpc.Channel:
        return grpc.insecure_channel(target, [*CHANNEL_OPTIONS, *(options or ())], **kw)

    @staticmethod
    def secure_channel(target: str, credentials: grpc.ChannelCredentials,
                       options: Any = None, **kw: Any) -> grpc.Channel:
        return grpc.secure_channel(target, credentials,
                                   [*CHANNEL_OPTIONS, *(options or ())], **kw)


@contextlib.contextmanager
def shell_channel_limits() -> Iterator[None]:
    """While inside, p4runtime-shell's clients open channels with tailcc's limits."""
    import p4runtime_sh.p4runtime as shell_client

    saved = shell_client.grpc
    shell_client.grpc = _GrpcWithLimits()
    try:
        yield
    finally:
        shell_client.grpc = saved


def cmd_shell(args: argparse.Namespace) -> int:
    try:
        import p4runtime_sh.shell as sh
    except ImportError:
        # Not a plain `pip install p4runtime-shell`: its pins (protobuf < 3.21, PyPI's
        # p4runtime) would replace the environment's protobuf and P4Runtime stubs.
        raise UsageError("p4runtime-shell is not installed: `make setup` installs it "
                         "(pip install --no-deps p4runtime-shell==0.0.4)") from None
    with tempfile.TemporaryDirectory(prefix="tailcc-shell-") as tmp:
        argv = shell_argv(args, Path(tmp))
        print(f"p4runtime-shell {shlex.join(argv)}", file=sys.stderr, flush=True)
        saved = sys.argv
        sys.argv = ["p4runtime-shell", *argv]
        try:
            with shell_channel_limits():
                sh.main()
        except SystemExit as exc:        # p4runtime-shell exits on a refused pipeline
            return int(exc.code or 0) if not isinstance(exc.code, str) else 1
        finally:
            sys.argv = saved
    return 0


# --- completion ---------------------------------------------------------------------------
def _walk(parser: argparse.ArgumentParser, path: str,
          out: dict[str, tuple[list[str], list[str]]]) -> None:
    """path -> (words: subcommands or positional choices, options) for every parser."""
    words: list[str] = []
    options: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words.append(name)
                _walk(child, f"{path} {name}".strip(), out)
        elif action.option_strings:
            options += action.option_strings
        elif action.choices:
            words += [str(c) for c in action.choices]
    out[path] = (words, options)


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """A bash function over the parser tree; zsh runs the same through bashcompinit."""
    tree: dict[str, tuple[list[str], list[str]]] = {}
    _walk(parser, "", tree)
    prog = parser.prog
    fn = "_" + prog.replace("-", "_")
    def case(p: str) -> str:
        return shlex.quote(p) if p else '""'

    words_cases = "\n".join(f"    {case(p)}) echo {shlex.quote(' '.join(w))};;"
                             for p, (w, _) in sorted(tree.items()) if w)
    opts_cases = "\n".join(f"    {case(p)}) echo {shlex.quote(' '.join(o))};;"
                            for p, (_, o) in sorted(tree.items()) if o)
    body = f"""# {prog} completion ({shell}); generated by `{prog} completion {shell}`
{fn}_words() {{
  case "$1" in
{words_cases}
  esac
}}
{fn}_opts() {{
  case "$1" in
{opts_cases}
  esac
}}
{fn}() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" w i words
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    [[ "$w" == -* ]] && continue
    words=" $({fn}_words "$path") "
    [[ "$words" == *" $w "* ]] && path="${{path:+$path }}$w"
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$({fn}_opts "$path")" -- "$cur"))
  else
    words="$({fn}_words "$path")"
    if [[ -n "$words" ]]; then
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
  fi
}}
complete -o default -F {fn} {prog}
"""
    if shell == "zsh":
        body = ("#compdef " + prog + "\nautoload -U +X bashcompinit && bashcompinit\n"
                + body)
    return body


def cmd_completion(args: argparse.Namespace) -> int:
    print(completion_script(args.root_parser, args.shell), end="")
    return 0
