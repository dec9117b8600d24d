"""Test programs: the v1model skeleton around the part a test is about.

``v1model_program`` returns the P4 source of a whole v1model program: the includes, the
headers and metadata structs, the parser, the empty checksum controls, the deparser and
the ``V1Switch`` instantiation. A test hands in only what it varies, as P4 text: the
types, the ingress body, and where it needs them the parser body, the egress body, the
headers the deparser emits, declarations before the parser. A struct or block given as
``None`` is one the test declares itself (in ``types`` or ``declarations``).

``Names`` is how a skeleton spells its structs, parameters and blocks. The bodies a test
writes use those names, and control-plane names derive from them (``I.t``, ``hdr.h.a``),
so each test keeps its spelling: ``SHORT_NAMES`` (``H``, ``pk``, ``h``; the default),
``P4RT_NAMES`` (``headers_t``, ``pkt``, ``hdr``, ``VC``/``CC``), ``STF_NAMES`` (as P4RT's
with ``headers`` and ``m``), ``QUEUEING_NAMES`` (``h_t``, ``pkt``, ``h``) and
``P4INFO_NAMES`` (``H``, ``pk``, ``hdr``, ``Ing``).
The blocks come in the order of the package's parameters.
``switch_of_source`` writes a program's source to a file and loads it on the v1model switch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from softswitch.v1model.fast_switch import load_switch_file
from softswitch.v1model.switch import Switch


@dataclass(frozen=True)
class Names:
    """The spelling of a skeleton: struct types, parameters and block names."""

    headers: str = "H"        # the headers struct type
    meta: str = "M"           # the metadata struct type
    pkt: str = "pk"           # the packet_in / packet_out parameter
    hdr: str = "h"            # the headers parameter
    md: str = "m"             # the metadata parameter
    parser: str = "P"
    verify: str = "V"         # the (empty) verify-checksum control
    ingress: str = "I"
    egress: str = "E"
    compute: str = "C"        # the (empty) compute-checksum control
    deparser: str = "D"


SHORT_NAMES = Names()
P4RT_NAMES = Names(headers="headers_t", meta="meta_t", pkt="pkt", hdr="hdr", md="meta",
                   verify="VC", compute="CC")
STF_NAMES = replace(P4RT_NAMES, headers="headers", md="m")
QUEUEING_NAMES = Names(headers="h_t", meta="m_t", pkt="pkt")
P4INFO_NAMES = Names(hdr="hdr", md="meta", verify="VC", ingress="Ing", compute="CC")

INCLUDES = "#include <core.p4>\n#include <v1model.p4>\n"

# The controller's packet-in / packet-out headers (for ``types``) and the egress body
# that fills packet-in on a packet to the CPU port, 255, as P4Runtime tests use them.
CONTROLLER_HEADERS = """
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
"""
# packet_out from the CPU port (255), then Ethernet into ``hdr.eth``
CONTROLLER_PARSER = """
    state start {
        transition select(sm.ingress_port) { 255: parse_po; default: parse_eth; }
    }
    state parse_po { pkt.extract(hdr.packet_out); transition parse_eth; }
    state parse_eth { pkt.extract(hdr.eth); transition accept; }
"""
PACKET_IN_EGRESS = """
    apply {
        if (sm.egress_port == 255) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
        }
    }
"""


def v1model_program(*, ingress: str | None, headers: str | None, meta: str | None = "",
                    types: str = "", declarations: str = "", parser: str | None = None,
                    extract: Sequence[str] = (), egress: str | None = "apply { }",
                    emit: Sequence[str] = (), package_annotation: str = "",
                    package: bool = True, names: Names = SHORT_NAMES) -> str:
    """The P4 source of a v1model program built from a test's parts.

    ``types``: type declarations, first. ``headers`` / ``meta``: the members of the
    headers / metadata struct. ``declarations``: what stands between the structs and the
    parser (functions, sub-controls, sub-parsers, errors). ``parser``, ``ingress``,
    ``egress``: the bodies of those blocks (locals, states, ``apply { … }``); without a
    ``parser`` body the start state extracts ``extract`` in turn and accepts. ``emit``:
    what the deparser emits, in order. ``headers``, ``meta``, ``ingress`` or ``egress``
    given as ``None``: the test declares that struct or block itself (in ``types`` or
    ``declarations``). ``package=False``: no ``V1Switch`` instantiation, a program without
    ``main``."""
    n = names
    if parser is None:
        parser = f"    state start {{ {_calls(n.pkt, 'extract', extract)}transition accept; }}"
    main = (f"{package_annotation}V1Switch({n.parser}(), {n.verify}(), {n.ingress}(), "
            f"{n.egress}(), {n.compute}(), {n.deparser}()) main;")
    parts = [
        INCLUDES + types,
        _struct(n.headers, headers),
        _struct(n.meta, meta),
        declarations,
        _block(f"parser {n.parser}(packet_in {n.pkt}, out {n.headers} {n.hdr}, "
               f"inout {n.meta} {n.md}, inout standard_metadata_t sm)", parser),
        f"control {n.verify}(inout {n.headers} {n.hdr}, inout {n.meta} {n.md}) {{ apply {{ }} }}",
        _block(f"control {n.ingress}({_pipe_params(n)})", ingress),
        _block(f"control {n.egress}({_pipe_params(n)})", egress),
        f"control {n.compute}(inout {n.headers} {n.hdr}, inout {n.meta} {n.md}) {{ apply {{ }} }}",
        f"control {n.deparser}(packet_out {n.pkt}, in {n.headers} {n.hdr}) "
        f"{{ apply {{ {_calls(n.pkt, 'emit', emit)}}} }}",
        main if package else "",
    ]
    return "\n".join(part.strip("\n") for part in parts if part) + "\n"


def _pipe_params(n: Names) -> str:
    return f"inout {n.headers} {n.hdr}, inout {n.meta} {n.md}, inout standard_metadata_t sm"


def _calls(pkt: str, method: str, args: Sequence[str]) -> str:
    if isinstance(args, str):
        raise TypeError(f"{method}: a sequence of header references, not the string {args!r}")
    return "".join(f"{pkt}.{method}({a}); " for a in args)


def _struct(name: str, members: str | None) -> str:
    if members is None:
        return ""
    return f"struct {name} {{ {members} }}" if members else f"struct {name} {{ }}"


def _block(head: str, body: str | None) -> str:
    """``head { body }``; the body on its own lines unless it is one short line."""
    if body is None:
        return ""
    body = body.strip("\n")
    if "\n" not in body and len(head) + len(body.strip()) < 96:
        return f"{head} {{ {body.strip()} }}"
    return f"{head} {{\n{body}\n}}"


def switch_of_source(directory: Path, source: str, name: str = "prog.p4") -> Switch:
    """The v1model switch running ``source``, written to ``directory/name`` first."""
    path = directory / name
    path.write_text(source)
    return load_switch_file(path)
