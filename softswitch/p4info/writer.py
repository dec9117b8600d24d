"""Write a P4Info message in the format its file name asks for (like p4c's
``--p4runtime-files``): ``.txt``/``.txtpb`` text, ``.bin`` binary, ``.json`` JSON."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from softswitch.diagnostics import P4Error

_TEXT_HEADER = ("# proto-file: p4/config/v1/p4info.proto\n"
                "# proto-message: p4.config.v1.P4Info\n\n")


def serialize(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """``fmt`` is ``text``, ``binary`` or ``json``."""
    if fmt == "binary":
        return p4info.SerializeToString()
    if fmt == "json":
        return json_format.MessageToJson(p4info, indent=2).encode() + b"\n"
    if fmt == "text":
        return (_TEXT_HEADER + text_format.MessageToString(p4info)).encode()
    raise ValueError(f"unknown P4Info format {fmt!r}")


def format_for(path: str | Path) -> str:
    suffix = Path(path).suffix
    formats = {".txt": "text", ".txtpb": "text", ".bin": "binary", ".json": "json"}
    if suffix not in formats:
        raise P4Error(f"{path}: Could not detect p4runtime info file format from file "
                      "suffix; known suffixes are .bin, .txt, .txtpb, .json")
    return formats[suffix]


def write(p4info: p4info_pb2.P4Info, path: str | Path) -> None:
    data = serialize(p4info, format_for(path))
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise P4Error(f"Couldn't open P4Runtime API file: {path}: {exc.strerror}") from exc


def read(path: str | Path) -> p4info_pb2.P4Info:
    """Read a P4Info file written by softswitch or p4c (format from the suffix)."""
    fmt = format_for(path)
    msg = p4info_pb2.P4Info()
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise P4Error(f"{path}: {exc.strerror}") from exc
    try:
        if fmt == "binary":
            msg.ParseFromString(raw)
        elif fmt == "json":
            json_format.Parse(raw.decode(), msg)
        else:
            text_format.Parse(raw.decode(), msg)
    except (text_format.ParseError, json_format.ParseError, ValueError) as exc:
        raise P4Error(f"{path}: not a valid P4Info file: {exc}") from exc
    return msg
