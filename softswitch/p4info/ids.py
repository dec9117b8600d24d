"""P4Runtime ids and aliases, assigned the way p4c assigns them.

Controllers and tests written against p4c-generated P4Info hard-code ids and use the
short aliases, so softswitch must reproduce p4c's scheme bit for bit:

* an id is ``(resource-type prefix << 24) | (hash(name) & 0xffffff)``, where the hash
  is Jenkins' one-at-a-time hash of the fully qualified control-plane name;
* ``@id(N)`` annotations win (the prefix is added when missing, a wrong prefix is an
  error);
* collisions are resolved by linear probing *of the hash value*, visiting names of
  one resource type in sorted order, so the result is deterministic;
* the alias of a name is its shortest dotted suffix that no other control-plane name
  of *any* resource type shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from softswitch.diagnostics import P4Error, SourceLoc

# Resource-type prefixes (top 8 bits of an id), from p4info.proto's P4Ids.Prefix.
ACTION = 0x01
TABLE = 0x02
VALUE_SET = 0x03
CONTROLLER_HEADER = 0x04
ACTION_PROFILE = 0x11
COUNTER = 0x12
DIRECT_COUNTER = 0x13
METER = 0x14
DIRECT_METER = 0x15
REGISTER = 0x16
DIGEST = 0x17

_MASK32 = 0xFFFFFFFF


def jenkins_one_at_a_time(data: str | bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), the hash p4c applies to names."""
    raw = data.encode() if isinstance(data, str) else data
    h = 0
    for byte in raw:
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


class SuffixSet:
    """Dotted names, answering 'shortest suffix that identifies this name'.

    A suffix of components is unique when only one name in the set ends with it; the
    alias is the shortest such suffix (the whole name when it is a suffix of another).
    """

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._counts: dict[tuple[str, ...], int] = {}

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        parts = tuple(name.split("."))
        for i in range(len(parts)):
            suffix = parts[len(parts) - 1 - i:]
            self._counts[suffix] = self._counts.get(suffix, 0) + 1

    def shortest_unique_suffix(self, name: str) -> str:
        parts = tuple(name.split("."))
        for n in range(1, len(parts) + 1):
            if self._counts.get(parts[len(parts) - n:], 0) < 2:
                return ".".join(parts[len(parts) - n:])
        return name


@dataclass
class _Entry:
    id: int | None
    loc: SourceLoc | None


@dataclass
class SymbolTable:
    """Control-plane symbols per resource type: collect all, then assign ids at once.

    Ids depend on every name of a resource type (collision probing runs in sorted
    name order), so :meth:`assign_ids` must run after the last :meth:`add`.
    """

    tables: dict[int, dict[str, _Entry]] = field(default_factory=dict)
    suffixes: SuffixSet = field(default_factory=SuffixSet)
    assigned: set[int] = field(default_factory=set)
    frozen: bool = False

    def add(self, kind: int, name: str, explicit_id: int | None = None,
            loc: SourceLoc | None = None) -> None:
        """Record a symbol; a duplicate name of the same kind is the same object."""
        if self.frozen:
            raise RuntimeError("symbol added after ids were assigned")
        table = self.tables.setdefault(kind, {})
        if name in table:
            return
        table[name] = _Entry(self._claim_explicit(kind, explicit_id, name, loc), loc)
        self.suffixes.add(name)

    def _claim_explicit(self, kind: int, explicit_id: int | None, name: str,
                        loc: SourceLoc | None) -> int | None:
        if explicit_id is None:
            return None
        if explicit_id < 0 or explicit_id > _MASK32:
            raise P4Error(f"{name}: @id should be an unsigned 32-bit integer", loc)
        prefix = kind << 24
        if explicit_id & 0xFF000000 and explicit_id & 0xFF000000 != prefix:
            raise P4Error(f"{name}: @id has the wrong 8-bit prefix", loc)
        full = explicit_id | prefix
        if full in self.assigned:
            raise P4Error(f"@id {full} is assigned to multiple declarations", loc)
        self.assigned.add(full)
        return full

    def assign_ids(self) -> None:
        """Give every symbol without ``@id`` its hash-derived id (p4c's probing order)."""
        for kind in sorted(self.tables):
            table = self.tables[kind]
            for name in sorted(table, key=lambda s: s.encode()):
                entry = table[name]
                if entry.id is None:
                    entry.id = self._probe(kind, jenkins_one_at_a_time(name), name)
        self.frozen = True

    def _probe(self, kind: int, start: int, name: str) -> int:
        def make(v: int) -> int:
            return (kind << 24) | (v & 0xFFFFFF)

        value = start
        while make(value) in self.assigned:
            value = (value + 1) & _MASK32
            if value == start:
                raise P4Error(f"No available id to represent {name} in P4Runtime")
        ident = make(value)
        self.assigned.add(ident)
        return ident

    def id_of(self, kind: int, name: str) -> int:
        entry = self.tables[kind][name]
        assert entry.id is not None, "ids not assigned yet"
        return entry.id

    def has(self, kind: int, name: str) -> bool:
        return name in self.tables.get(kind, {})

    def alias(self, name: str) -> str:
        return self.suffixes.shortest_unique_suffix(name)

    def names(self, kind: int) -> list[str]:
        return list(self.tables.get(kind, {}))

