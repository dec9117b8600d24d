"""Comparing softswitch's P4Info with a reference compiler's, for the corpus tests.

tests/test_p4info_corpus.py (v1model, p4c's P4Info) and tests/test_pna_p4info_corpus.py
(PNA, p4test --arch pna's) compare the same way: compile the program, generate its
P4Info, compare as protobuf messages with ``doc`` fields ignored, and sort the outcome
into equal / differ / rejected / internal-error.
"""

from __future__ import annotations

import traceback
from collections import Counter
from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import Message
from p4.config.v1 import p4info_pb2

Outcome = tuple[str, str, str]          # (program, outcome, detail)


def strip_doc(msg: Message) -> None:
    """Clear every ``doc`` field (the reference's documentation strings are not compared)."""
    for fd, value in msg.ListFields():
        if fd.name == "doc":
            msg.ClearField("doc")
            continue
        if fd.message_type is None:
            continue
        if not fd.is_repeated:
            strip_doc(value)
        elif fd.message_type.GetOptions().map_entry:
            if fd.message_type.fields_by_name["value"].message_type is not None:
                for key in value:
                    strip_doc(value[key])
        else:
            for item in value:
                strip_doc(item)


def reference_p4info(path: Path) -> p4info_pb2.P4Info:
    """The reference compiler's P4Info text file, ``doc`` fields cleared."""
    msg = p4info_pb2.P4Info()
    text_format.Parse(path.read_text(), msg)
    strip_doc(msg)
    return msg


def compare(name: str, program: Path, expected: p4info_pb2.P4Info) -> Outcome:
    """softswitch's P4Info for ``program`` against ``expected``: (name, outcome, detail);
    outcome: equal, differ, rejected, internal-error."""
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    try:
        got = generate(compile_program(program))
    except P4Error as exc:
        # p4c writes an empty P4Info when its generator reports an error.
        if expected == p4info_pb2.P4Info():
            return name, "equal", ""
        return name, "rejected", str(exc).splitlines()[0]
    except Exception:  # noqa: BLE001 - an internal error is what the tests report
        return name, "internal-error", traceback.format_exc(limit=3)
    strip_doc(got)
    return name, "equal" if got == expected else "differ", ""


def report(out: list[Outcome], what: str) -> None:
    """Print the equality rate and every program that is not equal."""
    counts = Counter(outcome for _, outcome, _ in out)
    print(f"\n{what}: {counts['equal']}/{len(out)} ({counts['equal'] / len(out):.1%}); "
          f"{dict(counts)}")
    for name, outcome, detail in out:
        if outcome != "equal":
            print(f"  {outcome}: {name} {detail[:200]}")


def internal_errors(out: list[Outcome]) -> list[str]:
    return [f"{n}:\n{d}" for n, o, d in out if o == "internal-error"]


def equal_rate(out: list[Outcome]) -> float:
    return sum(1 for _, o, _ in out if o == "equal") / len(out)
