"""Typed, path-aware access to the loaded YAML tree.

Each getter checks one value's type and range, records a path-naming problem when it
is wrong and returns ``None`` so validation carries on and reports every mistake.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from controlplane.intent.problems import Problems, child_path

_MISSING = object()
MAX_NAME = 64          # names show in CLI tables, metrics labels and messages
_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
_Net = TypeVar("_Net", ipaddress.IPv4Network, ipaddress.IPv6Network)


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "empty"}.get(type(value),
                                                                          type(value).__name__)


@dataclass
class Node:
    """One value of the YAML tree with its path and the shared problem list."""

    value: Any
    path: str
    problems: Problems

    def error(self, message: str) -> None:
        self.problems.add(self.path, message)

    # --- containers ----------------------------------------------------------------
    def mapping(self, allowed: tuple[str, ...]) -> bool:
        """True if a mapping; reports keys outside ``allowed`` (typos are not ignored)."""
        if not isinstance(self.value, dict):
            self.error(f"expected a mapping, got {_type_name(self.value)}")
            return False
        for key in self.value:
            if key not in allowed:
                self.problems.add(child_path(self.path, str(key)),
                                  f"unknown key (expected one of: {', '.join(map(str, allowed))})")
        return True

    def get(self, key: str, default: Any = _MISSING) -> Node | None:
        """The child ``key``; a required child that is absent is reported."""
        if isinstance(self.value, dict) and key in self.value:
            return Node(self.value[key], child_path(self.path, key), self.problems)
        if default is _MISSING:
            self.problems.add(child_path(self.path, key), "required key is missing")
            return None
        return Node(default, child_path(self.path, key), self.problems)

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def items(self) -> Iterator[Node]:
        """The elements of a list (a missing/empty value is an empty list)."""
        if self.value is None:
            return iter(())
        if not isinstance(self.value, list):
            self.error(f"expected a list, got {_type_name(self.value)}")
            return iter(())
        return (Node(v, child_path(self.path, i), self.problems)
                for i, v in enumerate(self.value))

    # --- scalars -------------------------------------------------------------------
    def integer(self, lo: int, hi: int) -> int | None:
        value = self.value
        if isinstance(value, str):
            try:
                value = int(value, 0)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(f"expected an integer, got {_type_name(self.value)} {self.value!r}")
            return None
        if not lo <= value <= hi:
            self.error(f"{value} is not in {lo}..{hi}")
            return None
        return value

    def number(self, lo: float, hi: float) -> float | None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(f"expected a number, got {_type_name(value)} {value!r}")
            return None
        if not lo <= value <= hi:
            self.error(f"{value} is not in {lo}..{hi}")
            return None
        return float(value)

    def string(self) -> str | None:
        if not isinstance(self.value, str) or not self.value:
            self.error(f"expected a non-empty string, got {_type_name(self.value)} "
                       f"{self.value!r}")
            return None
        return self.value

    def name(self) -> str | None:
        """An identifier: letters, digits, ``_``, ``-`` (used in CLI output and tables)."""
        value = self.string()
        if value is not None and len(value) > MAX_NAME:
            self.error(f"a name of {len(value)} characters: longer than the {MAX_NAME}-"
                       "character limit")
            return None
        if value is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", value):
            self.error(f"{value!r} is not a valid name (letters, digits, '_', '-', '.')")
            return None
        return value

    def boolean(self) -> bool | None:
        if not isinstance(self.value, bool):
            self.error(f"expected true or false, got {_type_name(self.value)} {self.value!r}")
            return None
        return self.value

    def choice(self, options: tuple[str, ...]) -> str | None:
        if self.value not in options:
            self.error(f"{self.value!r} is not one of: {', '.join(options)}")
            return None
        return str(self.value)

    def mac(self) -> str | None:
        if not isinstance(self.value, str) or not _MAC_RE.match(self.value):
            self.error(f"{self.value!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
            return None
        return self.value.lower()

    def ipv4(self) -> ipaddress.IPv4Address | None:
        try:
            return ipaddress.IPv4Address(str(self.value))
        except ValueError:
            self.error(f"{self.value!r} is not an IPv4 address")
            return None

    def ipv4_net(self) -> ipaddress.IPv4Network | None:
        """A prefix ``a.b.c.d/len`` (a bare address means /32); host bits must be 0."""
        return self._network(ipaddress.IPv4Network, "an IPv4 prefix (a.b.c.d/len)")

    def ip_net(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
        """An IPv4 or IPv6 prefix (routes); host bits must be 0."""
        text = str(self.value)
        if ":" not in text:
            return self.ipv4_net()
        return self._network(ipaddress.IPv6Network, "an IPv6 prefix (addr/len)")

    def _network(self, kind: type[_Net], what: str) -> _Net | None:
        """The value as a ``kind`` prefix, or an error naming ``what`` it should be."""
        text = str(self.value)
        try:
            return kind(text, strict=True)
        except ValueError as exc:
            if "host bits set" in str(exc):
                self.error(f"{text} has host bits set (did you mean "
                           f"{kind(text, strict=False)}?)")
            else:
                self.error(f"{self.value!r} is not {what}")
            return None

    def address(self) -> str | None:
        """A gRPC target ``host:port``."""
        value = self.string()
        if value is None:
            return None
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            self.error(f"{value!r} is not host:port")
            return None
        return value

    def int_range(self, lo: int, hi: int) -> tuple[int, int] | None:
        """An integer or ``"a..b"`` (either side may be empty: ``"..1024"``)."""
        value = self.value
        if isinstance(value, str) and ".." in value:
            left, _, right = value.partition("..")
            try:
                a = int(left, 0) if left.strip() else lo
                b = int(right, 0) if right.strip() else hi
            except ValueError:
                self.error(f"{value!r} is not a range lo..hi")
                return None
        else:
            single = self.integer(lo, hi)
            return None if single is None else (single, single)
        if not (lo <= a <= hi and lo <= b <= hi):
            self.error(f"range {a}..{b} is not within {lo}..{hi}")
            return None
        if a > b:
            self.error(f"empty range {a}..{b} (low end above high end)")
            return None
        return (a, b)
