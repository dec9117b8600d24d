"""Forwarding-pipeline configs: what ``p4_device_config`` holds and how it is loaded.

BMv2 takes its JSON in ``p4_device_config``; softswitch compiles P4 itself, so the
device config is the program: either the P4 source text as is, or softswitch's
*artifact*, a small JSON envelope (``{"format": "softswitch-pipeline", "version": 1,
"filename": …, "source": …, "defines": {…}, "files": {relative path: text}}``) that
also carries the ``-D`` defines and the user's own ``#include`` files. It is
recompiled on every load, so an artifact never goes stale against softswitch.

A config is untrusted input. Its size is bounded (``max_source_bytes``, the whole
``p4_device_config``), its ``#include``s may only reach the files it carries and
softswitch's ``p4include/`` (never absolute or ``..`` paths, never device files), and
it is first compiled in a sandboxed worker under the server's compile limits
(:mod:`softswitch.p4runtime.isolate`): a limit hit is RESOURCE_EXHAUSTED naming the
limit, a program error INVALID_ARGUMENT with p4c-style diagnostics.

The P4Info a client sends must describe the program it sends: the server compares
ids, names, match fields, action parameters and widths (not documentation or
annotations) and refuses a mismatch with INVALID_ARGUMENT, rather than letting
every later write fail in puzzling ways.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from p4.config.v1 import p4info_pb2

from softswitch.diagnostics import P4Error
from softswitch.frontend.limits import (
    DEFAULT,
    FLAGS,
    LimitExceeded,
    Limits,
    applied,
    describe,
)
from softswitch.p4runtime import errors, isolate

ARTIFACT_FORMAT = "softswitch-pipeline"
ARTIFACT_VERSION = 1
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


@dataclass
class Artifact:
    """A P4 program as the device config carries it."""

    source: str
    filename: str = "program.p4"
    defines: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return json.dumps({"format": ARTIFACT_FORMAT, "version": ARTIFACT_VERSION,
                           "filename": self.filename, "source": self.source,
                           "defines": self.defines, "files": self.files},
                          indent=1, sort_keys=True).encode()


def make_artifact(path: str, defines: dict[str, str] | None = None) -> Artifact:
    """Bundle a program with the quoted ``#include`` files below its directory
    (recursively, each resolved from the including file's directory as cpp does)."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    base = os.path.dirname(os.path.abspath(path))
    files: dict[str, str] = {}
    pending = [(base, rel) for rel in _INCLUDE.findall(source)]
    while pending:
        where, rel = pending.pop()
        full = os.path.normpath(os.path.join(where, rel))
        key = os.path.relpath(full, base)
        if key in files or not os.path.isfile(full) or not full.startswith(base + os.sep):
            continue
        with open(full, encoding="utf-8") as f:
            files[key] = f.read()
        pending.extend((os.path.dirname(full), r) for r in _INCLUDE.findall(files[key]))
    return Artifact(source, os.path.basename(path), dict(defines or {}), files)


def parse_device_config(data: bytes, limits: Limits = DEFAULT) -> Artifact:
    """The program in a ``p4_device_config``: an artifact, or plain P4 source."""
    cap = limits.max_source_bytes
    if cap is not None and len(data) > cap:
        raise errors.resource_exhausted(
            f"p4_device_config is {len(data)} bytes, more than the server's limit of "
            f"{describe('max_source_bytes', cap)} (softswitch run --max-source-bytes)")
    if not data.strip():
        raise errors.invalid("p4_device_config is empty: it must hold the P4 program "
                             "(source text or a softswitch artifact)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.invalid("p4_device_config is neither UTF-8 P4 source nor a "
                             "softswitch artifact (a BMv2 JSON cannot be loaded)") from None
    if not text.lstrip().startswith("{"):
        return Artifact(text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.invalid(f"p4_device_config: malformed JSON: {exc}") from None
    return _artifact_from_json(obj)


def _artifact_from_json(obj: Any) -> Artifact:
    if not isinstance(obj, dict) or obj.get("format") != ARTIFACT_FORMAT:
        raise errors.invalid("p4_device_config is JSON but not a softswitch artifact "
                             f"(format must be '{ARTIFACT_FORMAT}'; BMv2 JSON is not "
                             "supported: send the P4 source)")
    if obj.get("version") != ARTIFACT_VERSION:
        raise errors.invalid(f"softswitch artifact version {obj.get('version')!r} is not "
                             f"supported (expected {ARTIFACT_VERSION})")
    source, defines, files = obj.get("source"), obj.get("defines", {}), obj.get("files", {})
    filename = obj.get("filename", "program.p4")
    if not isinstance(source, str) or not isinstance(filename, str):
        raise errors.invalid("softswitch artifact: 'source' and 'filename' must be strings")
    for what, mapping in (("defines", defines), ("files", files)):
        if not isinstance(mapping, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            raise errors.invalid(f"softswitch artifact: '{what}' must map strings to strings")
    return Artifact(source, os.path.basename(filename) or "program.p4", defines, files)


@dataclass
class Compiled:
    """A program ready to run: its P4Info and a fresh switch."""

    p4info: p4info_pb2.P4Info
    switch: Any


Compiler = Callable[[str, dict[str, str]], Compiled]


def compile_file(path: str, defines: dict[str, str],
                 include_dirs: tuple[str, ...] = ()) -> Compiled:
    """Compile with softswitch's front end, P4Info generator and the target of the
    program's architecture (v1model switch or PNA NIC, from ``main``'s package)."""
    from softswitch import p4info
    from softswitch.architecture import load_target
    from softswitch.frontend.compiler import compile_program

    checked = compile_program(path, include_dirs, defines)
    return Compiled(p4info.generate(checked), load_target(checked))


def build(artifact: Artifact, compiler: Compiler = compile_file,
          limits: Limits | None = DEFAULT) -> Compiled:
    """Compile an artifact in a scratch directory; INVALID_ARGUMENT with p4c-style
    diagnostics when the program has errors, RESOURCE_EXHAUSTED when it hits one of
    ``limits`` (None: a trusted program — no limits, no include restrictions, no
    worker, as for the program on ``softswitch run``'s command line)."""
    if limits is not None:
        total = len(artifact.source.encode()) + sum(len(t.encode())
                                                    for t in artifact.files.values())
        if limits.max_source_bytes is not None and total > limits.max_source_bytes:
            raise errors.resource_exhausted(
                f"the program and its files are {total} bytes, more than the server's "
                f"limit of {describe('max_source_bytes', limits.max_source_bytes)} "
                "(softswitch run --max-source-bytes)")
    with tempfile.TemporaryDirectory(prefix="softswitch-p4rt-") as tmp:
        tmp = os.path.realpath(tmp)
        for rel, text in artifact.files.items():
            full = os.path.normpath(os.path.join(tmp, rel))
            if os.path.isabs(rel) or not full.startswith(tmp + os.sep):
                raise errors.invalid(f"softswitch artifact: file path '{rel}' leaves the "
                                     "program's directory")
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        main = os.path.join(tmp, artifact.filename)
        with open(main, "w", encoding="utf-8") as f:
            f.write(artifact.source)
        try:
            if limits is None:
                return compiler(main, artifact.defines)
            confined = limits.restricted_to(tmp)
            if compiler is compile_file:
                _check_isolated(artifact, main, confined, limits)
            with applied(confined):
                return compiler(main, artifact.defines)
        except isolate.Cancelled as exc:
            raise errors.P4RuntimeError(grpc.StatusCode.UNAVAILABLE, str(exc)) from None
        except LimitExceeded as exc:
            flag = FLAGS.get(exc.limit, "")
            raise errors.resource_exhausted(
                "the P4 program exceeds a compile limit of this server: "
                f"{exc.detail.replace(tmp + os.sep, '')} (softswitch run {flag})") from None
        except P4Error as exc:
            text = str(exc).replace(tmp + os.sep, "")
            missing = [rel for rel in _INCLUDE.findall(artifact.source)
                       if rel not in artifact.files and not os.path.isabs(rel)
                       and ".." not in rel.split("/")]
            if missing and not artifact.files and "No such file" in text:
                text += ("\nnote: plain P4 source cannot bring its own #include files "
                         f"({', '.join(missing)}); send a softswitch artifact instead "
                         "(softswitch.p4runtime.pipeline.make_artifact)")
            raise errors.invalid(f"the P4 program does not compile:\n{text}") from None


_VERIFIED: collections.OrderedDict[str, None] = collections.OrderedDict()
_VERIFIED_KEPT = 32
_verified_lock = threading.Lock()


def _check_isolated(artifact: Artifact, main: str, confined: Limits, limits: Limits) -> None:
    """Compile in the sandboxed worker, unless this very config already passed under
    the same limits (controllers and test suites push the same pipeline again and
    again; the worker costs a Python start-up)."""
    key = hashlib.sha256(artifact.to_bytes() + repr(limits).encode()).hexdigest()
    with _verified_lock:
        if key in _VERIFIED:
            _VERIFIED.move_to_end(key)
            return
    isolate.check(main, artifact.defines, confined)
    with _verified_lock:
        _VERIFIED[key] = None
        while len(_VERIFIED) > _VERIFIED_KEPT:
            _VERIFIED.popitem(last=False)


# ---------------------------------------------------------------------- P4Info checks
def signature(p4info: p4info_pb2.P4Info) -> dict[str, Any]:
    """What of a P4Info must agree with the program: ids, names and shapes."""
    sig: dict[str, Any] = {}
    sig["tables"] = sorted(
        (t.preamble.id, t.preamble.name,
         tuple((m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields),
         tuple(sorted((a.id, a.scope) for a in t.action_refs)),
         t.implementation_id, tuple(sorted(t.direct_resource_ids)), t.is_const_table)
        for t in p4info.tables)
    sig["actions"] = sorted(
        (a.preamble.id, a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params))
        for a in p4info.actions)
    for kind in ("counters", "meters", "registers"):
        sig[kind] = sorted((o.preamble.id, o.preamble.name, o.size)
                           for o in getattr(p4info, kind))
    for kind in ("direct_counters", "direct_meters", "action_profiles", "value_sets",
                 "digests"):
        sig[kind] = sorted((o.preamble.id, o.preamble.name) for o in getattr(p4info, kind))
    sig["controller_packet_metadata"] = sorted(
        (c.preamble.id, c.preamble.name, tuple((m.id, m.name, m.bitwidth) for m in c.metadata))
        for c in p4info.controller_packet_metadata)
    return sig


def check_p4info(given: p4info_pb2.P4Info, program: p4info_pb2.P4Info) -> None:
    """INVALID_ARGUMENT when the request's P4Info does not describe the program."""
    a, b = signature(given), signature(program)
    for kind in b:
        if a[kind] != b[kind]:
            extra = set(map(repr, a[kind])) - set(map(repr, b[kind]))
            missing = set(map(repr, b[kind])) - set(map(repr, a[kind]))
            hint = sorted(extra)[:1] or sorted(missing)[:1]
            raise errors.invalid(f"the P4Info does not match the P4 program: its {kind} "
                                 f"differ ({'unexpected' if extra else 'missing'} "
                                 f"{hint[0] if hint else ''})")
