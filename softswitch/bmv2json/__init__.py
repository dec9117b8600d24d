"""softswitch runs p4c's BMv2 JSON (``p4c-bm2-ss -o PROG.json``).

The entry point: the JSON becomes the typed program the front end hands to core's
lowering, not core's built pipeline. :mod:`program` writes the document as the
equivalent v1model P4_16 program (every table, action, counter, register and meter under
its JSON name, so control-plane names are p4c's) and the front end's checker types it
into a ``CheckedProgram`` — the annotations lowering relies on come from the one pass
that defines them, instead of a second, hand-built copy. From there the pipeline is
built exactly as from source: interpreter, compiled fast path, traffic manager and
P4Runtime server serve it unchanged, and no second lowering of P4 semantics can drift.

The document is read and validated first (:mod:`reader`: located syntax errors, the path
and line of anything malformed); what softswitch cannot run is refused at load naming
the JSON object (``actions[3] "foo": primitive 'xyz' is not supported``). Modules:
:mod:`reader`, :mod:`context` (names), :mod:`headers`, :mod:`exprs`, :mod:`primitives`,
:mod:`externs`, :mod:`parsers`, :mod:`actions`, :mod:`tables`, :mod:`flow`,
:mod:`controls`, :mod:`program`; :mod:`differential` compares the JSON path with the
source path on p4c's corpus; ``python -m softswitch.bmv2json`` loads, prints or
STF-tests one document.

``load(source)`` (JSON text, bytes or a path) returns the loaded v1model switch,
``load_program`` its ``CheckedProgram``, ``to_p4`` the P4 form, ``run_stf`` an STF result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softswitch.bmv2json.reader import JsonNode, LoadError, read_document, read_text
from softswitch.diagnostics import P4Error, SourceLoc

__all__ = ["LoadError", "load", "load_program", "run_stf", "to_p4"]


def _document(source: str | bytes | Path) -> JsonNode:
    text, file = read_text(source)
    return read_document(text, file)


def to_p4(source: str | bytes | Path) -> str:
    """The v1model P4_16 source equivalent to a BMv2 JSON document (text, bytes or path)."""
    from softswitch.bmv2json.program import to_p4 as generate

    return generate(_document(source))


def load_program(source: str | bytes | Path) -> Any:
    """The front end's ``CheckedProgram`` of a BMv2 JSON document."""
    from softswitch.bmv2json.program import to_p4 as generate
    from softswitch.frontend.compiler import check_program
    from softswitch.frontend.parser import parse_text

    root = _document(source)
    file = root.source.file
    text = generate(root)
    try:
        return check_program(parse_text(text, f"{file}.p4"))
    except P4Error as e:
        line = e.loc.line if e.loc is not None else 0
        raise LoadError(f"softswitch cannot run this document: its P4 form is rejected "
                        f"(line {line} of to_p4's text: {e.message})",
                        SourceLoc(file, 1, 1)) from None


def load(source: str | bytes | Path, fastpath: str | None = None) -> Any:
    """The loaded v1model switch of a BMv2 JSON document (``fastpath``: ``off``, ``auto``
    or ``require``, as for a program loaded from source)."""
    from softswitch.architecture import load_target

    return load_target(load_program(source), "v1model", fastpath=fastpath)


def run_stf(json_path: str | Path, stf_path: str | Path, priority_queues: int = 1,
            fastpath: str | None = None) -> Any:
    """Run an STF test on the switch loaded from a BMv2 JSON file (an ``StfResult``)."""
    from softswitch.stf import parse_stf_file, run_commands

    commands = parse_stf_file(str(stf_path))
    switch = load(json_path, fastpath=fastpath)
    switch.priority_queues = priority_queues
    return run_commands(switch, commands)
