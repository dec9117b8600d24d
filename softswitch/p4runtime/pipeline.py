"""Forwarding-pipeline configs: what ``p4_device_config`` holds and how it is loaded.

softswitch compiles P4 itself, so the device config is a program: the P4 source text
as is; softswitch's *artifact*, a small JSON envelope (``{"format":
"softswitch-pipeline", "version": 1, "filename": …, "source": …, "defines": {…},
"files": {relative path: text}}``) that also carries the ``-D`` defines and the user's
own ``#include`` files; or, as BMv2 takes it, p4c's BMv2 JSON, which
:mod:`softswitch.bmv2json` writes as the equivalent P4 source. Any of the three may
come inside PI's ``p4.tmp.P4DeviceConfig`` wrapper (``reassign``, ``extras``,
``device_data``), as p4lang/tutorials' ``p4runtime_lib`` sends it. A config is
recompiled on every load, so it never goes stale against softswitch.

A config is untrusted input. Its size is bounded (``max_source_bytes``, the whole
``p4_device_config``), its ``#include``s may only reach the files it carries and
softswitch's ``p4include/`` (never absolute or ``..`` paths, never device files), and
it is first compiled in a sandboxed worker under the server's compile limits
(:mod:`softswitch.p4runtime.isolate`): a limit hit is RESOURCE_EXHAUSTED naming the
limit, a program error INVALID_ARGUMENT naming what the bytes were taken for.

The P4Info a client sends must describe the program it sends: the server compares
ids, names, match fields, action parameters and widths (not documentation or
annotations) and refuses a mismatch with INVALID_ARGUMENT. p4c's JSON carries no
P4Info ids and no ``@controller_header``s, so for a program from it the client's
P4Info (p4c's) is matched by names and shapes and its ids are the ones served.
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
from softswitch.p4runtime import errors, isolate, p4config

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
    # "" for P4 source or an artifact; for p4c's BMv2 JSON, what the bytes were taken
    # for ("p4_device_config (p4c's BMv2 JSON)"), which errors name
    converted_from: str = ""

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


BMV2_JSON = "p4c's BMv2 JSON"
# Top-level keys of p4c-bm2-ss's output, one of which marks a JSON object as BMv2's.
_BMV2_KEYS = ("header_types", "headers", "parsers", "deparsers", "pipelines", "actions",
              "__meta__")


@dataclass
class DeviceConfig:
    """A ``p4_device_config`` read: the program, and PI's wrapper fields when it came in
    a ``p4.tmp.P4DeviceConfig`` (``artifact`` None: the wrapper's ``device_data`` is
    empty, PI's "keep the running program, take the new P4Info")."""

    artifact: Artifact | None
    wrapped: bool = False
    reassign: bool = False
    extras: dict[str, str] = field(default_factory=dict)


def read_device_config(data: bytes, limits: Limits = DEFAULT) -> DeviceConfig:
    """A ``p4_device_config`` as sent: bare or in PI's wrapper (see :class:`DeviceConfig`)."""
    cap = limits.max_source_bytes
    if cap is not None and len(data) > cap:
        raise errors.resource_exhausted(
            f"p4_device_config is {len(data)} bytes, more than the server's limit of "
            f"{describe('max_source_bytes', cap)} (softswitch run --max-source-bytes)")
    if not data.strip():
        raise errors.invalid("p4_device_config is empty: it must hold the P4 program "
                             "(P4 source, a softswitch artifact or p4c's BMv2 JSON)")
    wrapper = p4config.unwrap(data)
    if wrapper is None:
        return DeviceConfig(_read_program(data, wrapped=False))
    artifact = (_read_program(wrapper.device_data, wrapped=True)
                if wrapper.device_data.strip() else None)
    return DeviceConfig(artifact, True, wrapper.reassign, wrapper.extras)


def parse_device_config(data: bytes, limits: Limits = DEFAULT) -> Artifact:
    """The program in a ``p4_device_config``: P4 source, a softswitch artifact or p4c's
    BMv2 JSON, bare or in PI's wrapper (whose ``device_data`` must then hold one)."""
    config = read_device_config(data, limits)
    if config.artifact is None:
        raise errors.invalid(f"p4_device_config is a {p4config.WRAPPER} with no device_data: "
                             "softswitch needs the program in it (p4c's BMv2 JSON, P4 "
                             "source or a softswitch artifact)")
    return config.artifact


def _read_program(data: bytes, wrapped: bool) -> Artifact:
    """The program in ``data`` (``wrapped``: a P4DeviceConfig's ``device_data``); errors
    name what the bytes were taken for, e.g. "p4_device_config (p4c's BMv2 JSON)"."""
    def taken_for(what: str) -> str:
        return (f"p4_device_config ({p4config.WRAPPER} carrying {what})" if wrapped
                else f"p4_device_config ({what})")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"p4_device_config ({p4config.WRAPPER}'s device_data)" if wrapped else \
            "p4_device_config"
        raise errors.invalid(f"{where} is neither UTF-8 P4 source, p4c's BMv2 JSON nor a "
                             f"softswitch artifact (byte {exc.start} is not UTF-8)") from None
    if not text.lstrip().startswith("{"):
        return Artifact(text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.invalid(f"{taken_for('JSON')}: malformed JSON at line {exc.lineno} "
                             f"column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise errors.invalid(f"{taken_for('JSON')}: malformed JSON: nested too "
                             "deeply") from None
    if isinstance(obj, dict) and obj.get("format") == ARTIFACT_FORMAT:
        return _artifact_from_json(obj)
    if isinstance(obj, dict) and any(key in obj for key in _BMV2_KEYS):
        return _artifact_from_bmv2(text, taken_for(BMV2_JSON))
    raise errors.invalid(f"{taken_for('JSON')} is neither p4c's BMv2 JSON (it has none of "
                         f"{', '.join(_BMV2_KEYS)}) nor a softswitch artifact (its "
                         f"'format' is not '{ARTIFACT_FORMAT}')")


def _artifact_from_bmv2(text: str, taken_for: str) -> Artifact:
    """p4c's BMv2 JSON as the P4 program :mod:`softswitch.bmv2json` writes for it."""
    from softswitch import bmv2json

    try:
        source = bmv2json.to_p4(text)
    except bmv2json.LoadError as exc:
        loc = exc.loc
        at = f"line {loc.line} column {loc.col}: " if loc is not None and loc.line else ""
        raise errors.invalid(f"{taken_for}: {at}{exc.message}") from None
    except RecursionError:
        raise errors.invalid(f"{taken_for}: nested too deeply") from None
    return Artifact(source, "bmv2_json.p4", converted_from=taken_for)


def _artifact_from_json(obj: dict[str, Any]) -> Artifact:
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
            compiled = _compile(artifact, main, tmp, compiler, limits)
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
            if artifact.converted_from:
                raise errors.invalid(f"{artifact.converted_from}: softswitch cannot run it: "
                                     "the P4 program it is written as (softswitch.bmv2json"
                                     f".to_p4) does not compile:\n{text}") from None
            raise errors.invalid(f"the P4 program does not compile:\n{text}") from None
    if artifact.converted_from:
        _ids_by_name(compiled.p4info)
    return compiled


def _compile(artifact: Artifact, main: str, tmp: str, compiler: Compiler,
             limits: Limits | None) -> Compiled:
    if limits is None:
        return compiler(main, artifact.defines)
    confined = limits.restricted_to(tmp)
    if compiler is compile_file:
        _check_isolated(artifact, main, confined, limits)
    with applied(confined):
        return compiler(main, artifact.defines)


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
def signature(p4info: p4info_pb2.P4Info, ids: bool = True) -> dict[str, Any]:
    """What of a P4Info must agree with the program: ids, names and shapes (``ids``
    False: what p4c's BMv2 JSON keeps of them: names and shapes, every reference by the
    name of what it refers to; action scopes, whether a table is const and whether a
    match field is optional or ternary left out, as the JSON does not say; and only
    the actions and action profiles tables refer to, the ones a controller can use)."""
    names = {o.preamble.id: o.preamble.name for kind in _PREAMBLE_KINDS
             for o in getattr(p4info, kind)}

    def ref(i: int) -> int | str:
        return i if ids else names.get(i, f"id {i}")

    def own(i: int) -> tuple[int, ...]:
        return (i,) if ids else ()

    def match_kind(m: p4info_pb2.MatchField) -> int:
        return m.match_type if ids or m.match_type != m.OPTIONAL else m.TERNARY

    def action_refs(t: p4info_pb2.Table) -> tuple[Any, ...]:
        if ids:
            return tuple(sorted((a.id, a.scope) for a in t.action_refs))
        return tuple(sorted({str(ref(a.id)) for a in t.action_refs}))

    sig: dict[str, Any] = {}
    sig["tables"] = sorted(
        (*own(t.preamble.id), t.preamble.name,
         tuple((*own(m.id), m.name, m.bitwidth, match_kind(m)) for m in t.match_fields),
         action_refs(t),
         ref(t.implementation_id) if t.implementation_id else 0,
         tuple(sorted(map(ref, t.direct_resource_ids))), *own(t.is_const_table))
        for t in p4info.tables)
    used = {a.id for t in p4info.tables for a in t.action_refs}
    sig["actions"] = sorted(
        (*own(a.preamble.id), a.preamble.name,
         tuple((*own(p.id), p.name, p.bitwidth) for p in a.params))
        for a in p4info.actions if ids or a.preamble.id in used)
    for kind in ("counters", "meters", "registers"):
        sig[kind] = sorted((*own(o.preamble.id), o.preamble.name, o.size)
                           for o in getattr(p4info, kind))
    for kind in ("direct_counters", "direct_meters", "value_sets", "digests"):
        sig[kind] = sorted((*own(o.preamble.id), o.preamble.name)
                           for o in getattr(p4info, kind))
    implementations = {t.implementation_id for t in p4info.tables}
    sig["action_profiles"] = sorted(
        (*own(o.preamble.id), o.preamble.name) for o in p4info.action_profiles
        if ids or o.preamble.id in implementations)
    sig["controller_packet_metadata"] = sorted(
        (*own(c.preamble.id), c.preamble.name,
         tuple((*own(m.id), m.name, m.bitwidth) for m in c.metadata))
        for c in p4info.controller_packet_metadata)
    return sig


_PREAMBLE_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters",
                   "meters", "direct_meters", "controller_packet_metadata", "value_sets",
                   "registers", "digests")
# P4Infos generated for programs from p4c's JSON (by content): the client's P4Info is
# matched with them by names, and served in their place.
_BY_NAME: collections.OrderedDict[str, None] = collections.OrderedDict()


def _p4info_key(p4info: p4info_pb2.P4Info) -> str:
    return hashlib.sha256(p4info.SerializeToString(deterministic=True)).hexdigest()


def _ids_by_name(p4info: p4info_pb2.P4Info) -> None:
    with _verified_lock:
        _BY_NAME[_p4info_key(p4info)] = None
        _BY_NAME.move_to_end(_p4info_key(p4info))
        while len(_BY_NAME) > _VERIFIED_KEPT:
            _BY_NAME.popitem(last=False)


def check_p4info(given: p4info_pb2.P4Info, program: p4info_pb2.P4Info) -> None:
    """INVALID_ARGUMENT when the request's P4Info does not describe the program.

    For a program from p4c's BMv2 JSON (whose ids softswitch can only guess: the JSON
    keeps no ``@id``) the P4Infos are compared by names and shapes, and ``program``
    becomes the client's P4Info, so the ids the client uses are the ones served; its
    ``@controller_header``s (which the JSON does not mark) are taken as given."""
    with _verified_lock:
        by_name = _p4info_key(program) in _BY_NAME
    a, b = signature(given, ids=not by_name), signature(program, ids=not by_name)
    if by_name and not b["controller_packet_metadata"]:
        a["controller_packet_metadata"] = []
    what = BMV2_JSON if by_name else "the P4 program"
    for kind in b:
        if a[kind] != b[kind]:
            extra = set(map(repr, a[kind])) - set(map(repr, b[kind]))
            missing = set(map(repr, b[kind])) - set(map(repr, a[kind]))
            hint = sorted(extra)[:1] or sorted(missing)[:1]
            raise errors.invalid(f"the P4Info does not match {what}: its {kind} "
                                 f"differ ({'unexpected' if extra else 'missing'} "
                                 f"{hint[0] if hint else ''})")
    if by_name:
        program.CopyFrom(given)
