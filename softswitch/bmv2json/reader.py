"""Reading p4c's BMv2 JSON: the text, its top-level shape, and located errors.

``read_document`` parses the JSON (a syntax error names ``file:line:col``) and checks
that it is a BMv2 document (``header_types``, ``headers``, ``parsers``, ``pipelines``,
``actions`` present, a known format version). ``JsonNode`` wraps one JSON object with its
path (``actions[3] "foo"``) so every later step can refuse what it cannot run with an
error naming the object and its line, never a ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch.diagnostics import P4Error, SourceLoc

TEXT_NAME = "<bmv2 json>"
REQUIRED = ("header_types", "headers", "parsers", "deparsers", "pipelines", "actions")
SUPPORTED_MAJOR = 2


class LoadError(P4Error):
    """A BMv2 JSON document that softswitch cannot load, naming where and why."""


@dataclass(frozen=True)
class Source:
    """The document's text, to locate an object by its path for an error."""

    file: str
    text: str

    def locate(self, path: str) -> SourceLoc:
        """Where the object at ``path`` starts: its section, then each named object in the
        path (``"name": "…"``) searched for in turn."""
        pos = 0
        section = re.match(r"[A-Za-z_]+", path)
        if section:
            found = re.search(rf'"{section.group()}"\s*:', self.text)
            pos = found.start() if found else 0
        for label in re.findall(r'"([^"]*)"', path):
            name = re.compile(r'"name"\s*:\s*' + re.escape(json.dumps(label)))
            found = name.search(self.text, pos)
            pos = found.start() if found else pos
        line = self.text.count("\n", 0, pos) + 1
        return SourceLoc(self.file, line, pos - self.text.rfind("\n", 0, pos))


@dataclass(frozen=True)
class JsonNode:
    """One JSON object (or array) at ``path`` inside the document ``source``."""

    value: Any
    path: str
    source: Source

    def error(self, message: str) -> LoadError:
        where = f"{self.path}: " if self.path else ""
        return LoadError(f"{where}{message}", self.source.locate(self.path))

    def get(self, key: str, kind: type | tuple[type, ...] = object, default: Any = ...) -> Any:
        """The member ``key`` (checked to be of ``kind``); ``default`` when absent."""
        if not isinstance(self.value, dict):
            raise self.error("expected an object")
        if key not in self.value or (self.value[key] is None and default is not ...):
            if default is ...:
                raise self.error(f"missing member \"{key}\"")
            return default
        got = self.value[key]
        if kind is not object and not isinstance(got, kind):
            raise self.error(f"member \"{key}\" has the wrong type ({type(got).__name__})")
        return got

    def child(self, key: str | int, label: str | None = None) -> JsonNode:
        """The node of member ``key`` (an index for arrays), labelled by its name."""
        sub = self.value[key]
        base = f"{self.path}." if self.path else ""
        path = f"{base}{key}" if isinstance(key, str) else f"{self.path}[{key}]"
        if label is None and isinstance(sub, dict) and isinstance(sub.get("name"), str):
            label = sub["name"]
        return JsonNode(sub, f"{path} \"{label}\"" if label else path, self.source)

    def items(self, key: str) -> list[JsonNode]:
        """The elements of the array member ``key`` (empty when absent or null)."""
        arr = self.get(key, list, default=[])
        node = JsonNode(arr, f"{self.path}.{key}" if self.path else key, self.source)
        return [node.child(i) for i in range(len(arr))]


def read_text(source: str | bytes | Path) -> tuple[str, str]:
    """(JSON text, file name) of ``source``: bytes or a string that starts like JSON are the
    text itself, any other string or a ``Path`` names the file to read."""
    if isinstance(source, bytes):
        return _decoded(source, TEXT_NAME), TEXT_NAME
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        return source, TEXT_NAME
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise LoadError(f"cannot read BMv2 JSON: {e.strerror}", SourceLoc(str(path), 0, 0)) \
            from None
    return _decoded(data, str(path)), str(path)


def _decoded(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise LoadError("BMv2 JSON is not UTF-8 text", SourceLoc(file, line, col)) from None


def read_document(text: str, file: str) -> JsonNode:
    """Parse and check the top-level shape of a BMv2 JSON document."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LoadError(f"malformed JSON: {e.msg}", SourceLoc(file, e.lineno, e.colno)) from None
    except RecursionError:
        raise LoadError("malformed JSON: nested too deeply", SourceLoc(file, 1, 1)) from None
    if not isinstance(doc, dict):
        raise LoadError("not a BMv2 JSON document: the top level is not an object",
                        SourceLoc(file, 1, 1))
    root = JsonNode(doc, "", Source(file, text))
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise root.error("not a BMv2 JSON document: missing " + ", ".join(missing))
    version = doc.get("__meta__", {}).get("version") if isinstance(doc.get("__meta__"),
                                                                    dict) else None
    if isinstance(version, list) and version and version[0] != SUPPORTED_MAJOR:
        raise root.error(f"BMv2 JSON format version {version} is not supported "
                         f"(softswitch reads {SUPPORTED_MAJOR}.x)")
    return root
