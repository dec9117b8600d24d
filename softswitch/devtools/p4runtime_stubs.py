"""P4Runtime's Python bindings, regenerated at install time for protobuf's fast (upb) runtime.

The generated modules PyPI's ``p4runtime`` wheels ship import only on an old protobuf
(1.4.1's need protobuf < 4, 1.6's the pure-Python backend), where every P4Runtime
message the server and tailcc's controller build, parse or serialize goes through
pure-Python protobuf. protobuf >= 5 runs on upb, a C runtime, but needs code generated
by a matching ``protoc``: this module makes that code.

Each ``_pb2`` module of the wheel embeds its file's serialized ``FileDescriptorProto``,
the protocol exactly as p4runtime 1.4.1 defines it. This module reads those bytes as
data (:func:`wheel_descriptors`; the modules would not import), adds the files they
import (:func:`descriptor_set`) and runs protoc over them (:func:`generate`). The output
has the wheel's module names (``p4.v1.p4runtime_pb2``, ...), so no import in the project
changes. It is packaged as a wheel named ``p4runtime``, version ``1.4.1+upb``, which
``make setup`` installs in place of PyPI's (pip keeps one ``p4runtime``, and tools that
require ``p4runtime==1.4.1`` see it satisfied).

Reproducible: the input wheel is pinned by version and SHA-256 and grpcio-tools (which
carries ``protoc``) by version; the same input gives byte-identical stubs (:func:`build_wheel`).

    python -m softswitch.devtools.p4runtime_stubs install      # what `make setup` runs
    python -m softswitch.devtools.p4runtime_stubs build WHEEL -o DIR   # only build the wheel

This module imports nothing of softswitch, so it runs before the stubs exist.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import importlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The protocol: p4runtime 1.4.1 (P4Runtime spec 1.4), the version p4runtime-shell and
# BMv2's PI speak. The hash pins the exact wheel the descriptors are read from.
P4RUNTIME_VERSION = "1.4.1"
P4RUNTIME_WHEEL = f"p4runtime-{P4RUNTIME_VERSION}-py3-none-any.whl"
P4RUNTIME_SHA256 = "0c22706c4df7d01b97b231f9628ae650b1afa721e834f1176276989f27d2f6ed"
# protoc comes with grpcio-tools; its version decides the generated code (and the oldest
# protobuf runtime the code accepts: 1.80.0 carries protoc 31.1, i.e. protobuf >= 6.31.1).
# grpcio-tools after 1.80 need protobuf 7; the project stays on protobuf 6.x.
GRPCIO_TOOLS = "grpcio-tools==1.80.0"
LOCAL_LABEL = "upb"
DIST_VERSION = f"{P4RUNTIME_VERSION}+{LOCAL_LABEL}"
# What the generated code needs at run time (grpcio: the _grpc modules check that the
# installed grpcio is at least the grpcio-tools that generated them).
REQUIRES = ("protobuf>=6.31.1,<7", "grpcio>=1.80.0", "googleapis-common-protos>=1.63")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class StubError(RuntimeError):
    """The input wheel or protoc did not give what the stubs need."""


# --- reading the wheel ----------------------------------------------------------------------
def embedded_descriptor(source: str, filename: str = "<module>") -> bytes:
    """The serialized ``FileDescriptorProto`` a protoc-generated ``_pb2`` module carries:
    ``FileDescriptor(serialized_pb=b'...')`` (protoc <= 3.19) or
    ``AddSerializedFile(b'...')`` (3.20 and later). Read from the syntax tree, never run."""
    found: list[bytes] = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "serialized_pb" and isinstance(kw.value, ast.Constant) \
                    and isinstance(kw.value.value, bytes):
                found.append(kw.value.value)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "AddSerializedFile" \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, bytes):
            found.append(node.args[0].value)
    if len(found) != 1:
        raise StubError(f"{filename}: expected one embedded FileDescriptorProto, "
                        f"found {len(found)}")
    return found[0]


def wheel_descriptors(wheel: Path) -> dict[str, bytes]:
    """``proto file name -> serialized FileDescriptorProto`` for every ``_pb2`` module of
    the wheel (``p4/v1/p4runtime.proto``, ``p4/config/v1/p4info.proto``, ...)."""
    from google.protobuf import descriptor_pb2

    out: dict[str, bytes] = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in sorted(zf.namelist()):
            if not name.endswith("_pb2.py"):
                continue
            data = embedded_descriptor(zf.read(name).decode("utf-8"), f"{wheel.name}:{name}")
            proto = descriptor_pb2.FileDescriptorProto.FromString(data)
            expected = name[:-len("_pb2.py")] + ".proto"
            if proto.name != expected:
                raise StubError(f"{wheel.name}:{name} describes {proto.name}, not {expected}")
            out[proto.name] = data
    if not out:
        raise StubError(f"{wheel}: no _pb2 modules")
    return out


def _installed_descriptor(name: str) -> bytes:
    """A dependency's serialized descriptor from the installed runtime (e.g.
    ``google/rpc/status.proto`` from googleapis-common-protos)."""
    module = name[:-len(".proto")].replace("/", ".") + "_pb2"
    try:
        return importlib.import_module(module).DESCRIPTOR.serialized_pb
    except ImportError as exc:
        raise StubError(f"{name} is imported by the P4Runtime protos but {module} is not "
                        f"installed ({exc})") from None


def descriptor_set(own: dict[str, bytes]) -> bytes:
    """A serialized ``FileDescriptorSet``: the wheel's files plus every file they import,
    transitively, each after its dependencies (the order protoc wants)."""
    from google.protobuf import descriptor_pb2

    protos: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    ordered: list[str] = []

    def add(name: str, stack: tuple[str, ...] = ()) -> None:
        if name in protos:
            return
        if name in stack:
            raise StubError(f"import cycle: {' -> '.join((*stack, name))}")
        data = own[name] if name in own else _installed_descriptor(name)
        proto = descriptor_pb2.FileDescriptorProto.FromString(data)
        for dep in proto.dependency:
            add(dep, (*stack, name))
        protos[name] = proto
        ordered.append(name)

    for name in sorted(own):
        add(name)
    fds = descriptor_pb2.FileDescriptorSet()
    fds.file.extend(protos[n] for n in ordered)
    return fds.SerializeToString(deterministic=True)


# --- generating -------------------------------------------------------------------------------
def generate(wheel: Path, out_dir: Path) -> list[Path]:
    """Run protoc over the wheel's descriptors into ``out_dir`` (a package tree ``p4/...``
    with the wheel's ``__init__.py`` files); returns the files written, sorted. The
    descriptors go in as one ``FileDescriptorSet`` with the ``google/protobuf/*`` and
    ``google/rpc/*`` files from the installed protobuf and googleapis-common-protos
    (``protoc --descriptor_set_in=... --python_out --grpc_python_out``)."""
    own = wheel_descriptors(wheel)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="p4runtime-stubs-") as tmp:
        fds = Path(tmp) / "p4runtime.fds"
        fds.write_bytes(descriptor_set(own))
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"--descriptor_set_in={fds}",
               f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *sorted(own)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise StubError(f"protoc failed ({proc.returncode}): {proc.stderr.strip()}")
    with zipfile.ZipFile(wheel) as zf:       # the packages' (empty) __init__.py, as shipped
        for name in zf.namelist():
            if name.endswith("/__init__.py") and not name.startswith(".."):
                target = out_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(name))
    return sorted(p for p in out_dir.rglob("*") if p.is_file())


def _metadata(wheel: Path) -> str:
    requires = "".join(f"Requires-Dist: {r}\n" for r in REQUIRES)
    return (f"Metadata-Version: 2.1\nName: p4runtime\nVersion: {DIST_VERSION}\n"
            "Summary: P4Runtime 1.4.1 Python bindings for protobuf's upb runtime, "
            "regenerated by tailcc from the p4runtime 1.4.1 wheel's descriptors\n"
            "License: Apache-2.0\n"
            f"{requires}\n"
            f"Generated by softswitch/devtools/p4runtime_stubs.py with {GRPCIO_TOOLS} from "
            f"{wheel.name} (sha256 {P4RUNTIME_SHA256}).\n")


def build_wheel(wheel: Path, out_dir: Path) -> Path:
    """Generate the stubs and pack them as ``p4runtime-1.4.1+upb-py3-none-any.whl`` in
    ``out_dir``; byte-identical for the same input wheel and grpcio-tools (entries
    sorted, each dated ``ZIP_DATE``)."""
    with tempfile.TemporaryDirectory(prefix="p4runtime-stubs-") as tmp:
        tree = Path(tmp) / "tree"
        files = generate(wheel, tree)
        dist_info = f"p4runtime-{DIST_VERSION}.dist-info"
        entries: dict[str, bytes] = {p.relative_to(tree).as_posix(): p.read_bytes()
                                     for p in files}
        with zipfile.ZipFile(wheel) as zf:
            licenses = [n for n in zf.namelist() if n.endswith(".dist-info/LICENSE")]
            if licenses:
                entries[f"{dist_info}/LICENSE"] = zf.read(licenses[0])
        entries[f"{dist_info}/METADATA"] = _metadata(wheel).encode()
        entries[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\n"
                                         b"Generator: softswitch.devtools.p4runtime_stubs\n"
                                         b"Root-Is-Purelib: true\n"
                                         b"Tag: py3-none-any\n")
        entries[f"{dist_info}/top_level.txt"] = b"p4\n"
        record = []
        for name, data in sorted(entries.items()):
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{name},sha256={digest.decode()},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        entries[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()

        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / f"p4runtime-{DIST_VERSION}-py3-none-any.whl"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zout:
            for name in sorted(entries, key=lambda n: (n.endswith("/RECORD"), n)):
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zout.writestr(info, entries[name])
        target.write_bytes(buf.getvalue())
        return target


# --- installing -------------------------------------------------------------------------------
def cache_dir() -> Path:
    """Where this environment keeps the downloaded input wheel and the built stubs."""
    return Path(sys.prefix) / "p4runtime-stubs"


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_wheel(directory: Path | None = None) -> Path:
    """PyPI's p4runtime 1.4.1 wheel, downloaded once (never installed) and checked
    against its pinned SHA-256."""
    directory = directory or cache_dir()
    path = directory / P4RUNTIME_WHEEL
    if not path.exists():
        _pip("download", "--quiet", "--no-deps", "--only-binary", ":all:",
             "--dest", str(directory), f"p4runtime=={P4RUNTIME_VERSION}")
    got = _sha256(path)
    if got != P4RUNTIME_SHA256:
        raise StubError(f"{path}: sha256 {got}, expected {P4RUNTIME_SHA256}")
    return path


def install() -> Path:
    """Download the input wheel, make sure the pinned protoc is here, build the stubs'
    wheel and install it over whatever ``p4runtime`` the environment had."""
    wheel = input_wheel()
    _pip("install", "--quiet", GRPCIO_TOOLS)
    built = build_wheel(wheel, cache_dir())
    _pip("install", "--quiet", "--no-deps", "--force-reinstall", str(built))
    return built


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m softswitch.devtools.p4runtime_stubs",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="download p4runtime 1.4.1, build and install the stubs")
    b = sub.add_parser("build", help="build the stubs' wheel from a p4runtime wheel")
    b.add_argument("wheel", type=Path, help="p4runtime-1.4.1-py3-none-any.whl")
    b.add_argument("-o", "--out", type=Path, default=Path("."), help="output directory")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "install":
            built = install()
            print(f"p4runtime stubs: installed {built.name} ({_sha256(built)[:16]})")
        else:
            built = build_wheel(args.wheel, args.out)
            print(built)
    except (StubError, subprocess.CalledProcessError, OSError) as exc:
        print(f"p4runtime_stubs: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
