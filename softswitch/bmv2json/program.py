"""The whole document as one v1model P4_16 program.

``to_p4`` resolves the document's names (:mod:`headers`, :mod:`externs`, actions by
id), then writes, in order: the ``error`` members and types, learn-list structs,
extern instances, the parser ``P``, the checksum controls ``VC``/``CC``, the
``ingress``/``egress`` pipelines as ``I``/``E``, the deparser ``D`` and
``V1Switch(P(), VC(), I(), E(), CC(), D()) main``.
"""

from __future__ import annotations

from softswitch.bmv2json import controls, externs, headers, parsers
from softswitch.bmv2json.context import Context
from softswitch.bmv2json.exprs import Unconvertible
from softswitch.bmv2json.reader import JsonNode

PIPELINES = (("ingress", "I"), ("egress", "E"))


def _checksum_control(ctx: Context, name: str, verify: bool) -> list[str]:
    calls = externs.checksum_statements(ctx, verify)
    return [f"control {name}(inout headers_t hdr, inout metadata_t meta) {{", "    apply {",
            *("        " + c for c in calls), "    }", "}"]


def context(root: JsonNode) -> Context:
    """The resolved names of ``root`` (a BMv2 JSON document)."""
    ctx = Context(root)
    headers.collect(ctx)
    externs.collect(ctx)
    for node in root.items("actions"):
        action_id = node.get("id", int)
        if action_id in ctx.actions:
            raise node.error(f"duplicate action id {action_id}")
        ctx.actions[action_id] = node
    return ctx


def to_p4(root: JsonNode) -> str:
    """P4_16 source text (v1model) equivalent to the BMv2 JSON document ``root``."""
    try:
        return _generate(root)
    except Unconvertible as e:
        raise root.error(str(e)) from None
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        raise root.error(f"malformed BMv2 JSON ({type(e).__name__}: {e})") from None


def _generate(root: JsonNode) -> str:
    ctx = context(root)
    pipes = {p.get("name", str): p for p in root.items("pipelines")}
    for name in pipes:
        if name not in dict(PIPELINES):
            raise root.error(f"pipeline {name!r} is not a v1model pipeline")
    out = ["#include <core.p4>", "#include <v1model.p4>"]
    out += headers.declarations(ctx)
    out += externs.learn_declarations(ctx)
    out += externs.declarations(ctx)
    out += parsers.parser(ctx)
    out += _checksum_control(ctx, "VC", True)
    pipelines: list[str] = []
    for pname, cname in PIPELINES:
        if pname in pipes:
            pipelines += controls.control(ctx, pipes[pname], cname)
        else:
            pipelines += [f"control {cname}(inout headers_t hdr, inout metadata_t meta, "
                          "inout standard_metadata_t sm) { apply { } }"]
    for _, _, lines in ctx.toplevel.values():
        out += lines
    out += pipelines
    out += _checksum_control(ctx, "CC", False)
    out += parsers.deparser(ctx)
    out.append("V1Switch(P(), VC(), I(), E(), CC(), D()) main;")
    return "\n".join(out) + "\n"
