"""Table-entry match keys: P4Runtime ``FieldMatch`` ⇄ switch ``KeyMatch``.

P4Runtime is strict about match keys so that one entry has exactly one encoding:
don't-care fields are omitted (a zero ternary mask, a /0 prefix, a full range are
errors), bits outside a mask or prefix must be zero, exact fields are mandatory. The
canonical form computed here is both the duplicate-detection key of an entry and
what Read returns, so a client reads back the same bytes it wrote (canonically).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import KeyMatch
from softswitch.p4runtime import bytestrings, encoding, errors
from softswitch.p4runtime.p4index import MATCH_KINDS, FieldPlan, TableIndex

MF = p4info_pb2.MatchField
# Canonical per-field match: (kind, a, b): exact (v, 0), lpm (v, plen), ternary (v, mask),
# range (lo, hi), optional (v, 0).
Norm = tuple[str, int, int]
MatchKey = tuple[tuple[tuple[int, Norm], ...], int]

_KIND = MATCH_KINDS


@dataclass(frozen=True)
class ParsedMatch:
    """A validated match: the canonical key, the switch's key list, the request's
    FieldMatches."""

    key: MatchKey
    switch_keys: list[KeyMatch]
    originals: Sequence[p4runtime_pb2.FieldMatch]

    def fields(self, table: TableIndex) -> list[p4runtime_pb2.FieldMatch]:
        return canonical_fields(table, self.key, list(self.originals))


def canonical_fields(table: TableIndex, key: MatchKey,
                     originals: list[p4runtime_pb2.FieldMatch]
                     ) -> list[p4runtime_pb2.FieldMatch]:
    """Canonical FieldMatches sorted by field id. The request's own messages are
    reused when they already are (as they are from most clients), so that no new
    message is built."""
    norms = key[0]
    if len(norms) == len(originals) and all(
            fm.field_id == fid and _is_canonical(fm, norm)
            for fm, (fid, norm) in zip(originals, norms, strict=True)):
        return originals
    return [_field_match(fid, table.fields[fid].bitwidth, norm) for fid, norm in norms]


def parse(table: TableIndex, matches: Sequence[p4runtime_pb2.FieldMatch],
          priority: int) -> ParsedMatch:
    """Validate a match + priority against the table; INVALID_ARGUMENT on any error.

    Fields are checked against the table's precompiled plans (TableIndex.plans)."""
    plans = table.plans
    if len(matches) > len(plans):
        raise errors.invalid("Too many fields in match key")
    given: dict[int, Norm] = {}
    unknown = False
    for fm in matches:
        fid = fm.field_id
        plan = plans.get(fid)
        if plan is None or fid in given:     # PI: an id given twice is unknown too
            unknown = True
            continue
        given[fid] = _normalise(plan, fm)
    if not table.exact_ids <= given.keys():
        raise errors.invalid("Missing non-ternary field in match key")
    if unknown:
        raise errors.invalid("Unknown field in match key")
    _check_priority(table, priority)
    key = (tuple(sorted(given.items())), priority)
    keys = [_switch_key(p, given.get(p.id)) for p in table.ordered]
    return ParsedMatch(key, keys, matches)


def _check_priority(table: TableIndex, priority: int) -> None:
    if table.needs_priority:
        if priority == 0:
            raise errors.invalid("Zero priority for ternary match")
        if priority < 0 or priority > 0x7FFFFFFF:
            raise errors.invalid(f"priority {priority} is outside 1..2^31-1")
    elif priority > 0:
        raise errors.invalid("Non-zero priority for non-ternary match")
    elif priority < 0:
        raise errors.invalid(f"priority {priority} of an exact/lpm table must be 0")


def _normalise(plan: FieldPlan, fm: p4runtime_pb2.FieldMatch) -> Norm:
    kind = plan.kind
    if kind is None:
        raise errors.unimplemented(f"match field '{plan.name}': match kind "
                                   f"'{plan.info.other_match_type}' is not supported")
    which = fm.WhichOneof("field_match_type")
    if which != kind:
        raise errors.invalid("Invalid match type")
    width = plan.width
    what = plan.what
    if kind == "exact":
        return ("exact", bytestrings.decode(fm.exact.value, width, what), 0)
    if kind == "lpm":
        return _lpm(plan, fm.lpm, what)
    if kind == "optional":
        return ("optional", bytestrings.decode(fm.optional.value, width, what), 0)
    if kind == "ternary":
        value = bytestrings.decode(fm.ternary.value, width, what)
        mask = bytestrings.decode(fm.ternary.mask, width, what + " mask")
        if mask == 0:
            raise errors.invalid("Invalid representation of 'don't care' ternary match, "
                                 "omit match field instead of using 0 mask")
        if value & ~mask:
            raise errors.invalid("Invalid ternary value, make sure value & mask == value")
        return ("ternary", value, mask)
    low = bytestrings.decode(fm.range.low, width, what + " low")
    high = bytestrings.decode(fm.range.high, width, what + " high")
    if _whole_range(fm.range.low, fm.range.high):
        raise errors.invalid("Invalid representation of 'don't care' range match, omit "
                             "match field instead of using low=0 and high=2**bitwidth-1")
    if low > high:
        raise errors.invalid("Invalid range value, make sure low <= high")
    return ("range", low, high)


def _whole_range(low: bytes, high: bytes) -> bool:
    """PI's test of a don't-care range, on the bytes as sent: low all zero bytes, high as
    many 0xff bytes (so a range over a field whose width is not a whole number of bytes
    is never one)."""
    return len(low) == len(high) and not low.strip(b"\x00") and not high.strip(b"\xff")


def _lpm(plan: FieldPlan, lpm: p4runtime_pb2.FieldMatch.LPM, what: str) -> Norm:
    width = plan.width
    value = bytestrings.decode(lpm.value, width, what)
    plen = lpm.prefix_len
    if plen < 0:
        raise errors.invalid("Prefix length cannot be < 0")
    if width and plen > width:
        raise errors.invalid("Prefix length cannot be > bitwidth")
    if plen == 0:
        raise errors.invalid("Invalid reprsentation of 'don't care' LPM match, omit match "
                             "field instead of using a prefix length of 0")
    host_bits = (1 << (width - plen)) - 1 if width else 0
    if value & host_bits:
        raise errors.invalid("Invalid LPM value, incorrect number of trailing zeros")
    return ("lpm", value, plen)


def _switch_key(plan: FieldPlan, norm: Norm | None) -> KeyMatch:
    kind = plan.kind
    name = plan.name
    if norm is None:
        if kind == "lpm":
            return KeyMatch(name, "lpm", 0, prefix_len=0)
        if kind == "ternary":
            return KeyMatch(name, "ternary", 0, mask=0)
        if kind == "range":
            return KeyMatch(name, "range", 0, high=(1 << plan.width) - 1)
        return KeyMatch(name, "optional", 0, wildcard=True)
    _, a, b = norm
    if kind == "lpm":
        return KeyMatch(name, "lpm", a, prefix_len=b)
    if kind == "ternary":
        return KeyMatch(name, "ternary", a, mask=b)
    if kind == "range":
        return KeyMatch(name, "range", a, high=b)
    return KeyMatch(name, kind or "exact", a)


def _field_match(fid: int, width: int, norm: Norm) -> p4runtime_pb2.FieldMatch:
    kind, a, b = norm
    fm = p4runtime_pb2.FieldMatch(field_id=fid)
    if kind == "exact":
        fm.exact.value = bytestrings.encode(a)
    elif kind == "optional":
        fm.optional.value = bytestrings.encode(a)
    elif kind == "lpm":
        fm.lpm.value = bytestrings.encode(a)
        fm.lpm.prefix_len = b
    elif kind == "ternary":
        fm.ternary.value = bytestrings.encode(a)
        fm.ternary.mask = bytestrings.encode(b)
    else:
        fm.range.low = bytestrings.encode(a)
        fm.range.high = bytestrings.encode(b)
    return fm


def _is_canonical(fm: p4runtime_pb2.FieldMatch, norm: Norm) -> bool:
    kind, a, b = norm
    enc = bytestrings.encode
    if kind == "exact":
        return fm.exact.value == enc(a)
    if kind == "lpm":
        return fm.lpm.value == enc(a)
    if kind == "ternary":
        return fm.ternary.value == enc(a) and fm.ternary.mask == enc(b)
    if kind == "range":
        return fm.range.low == enc(a) and fm.range.high == enc(b)
    return fm.optional.value == enc(a)


def from_switch(table: TableIndex, keys: list[KeyMatch]) -> list[p4runtime_pb2.FieldMatch]:
    """The canonical FieldMatches of an entry the switch holds (e.g. a const entry).

    Keys come in the table's key order (the switch's), so they pair up with P4Info's
    match fields by position; don't-care matches are omitted as P4Runtime requires.
    """
    out: list[p4runtime_pb2.FieldMatch] = []
    for info, km in zip(table.info.match_fields, keys, strict=False):
        norm = _norm_from_switch(info, km)
        if norm is not None:
            out.append(_field_match(info.id, info.bitwidth, norm))
    return sorted(out, key=lambda fm: fm.field_id)


def wire_from_switch(table: TableIndex, keys: list[KeyMatch]) -> bytes:
    """:func:`from_switch`'s FieldMatches as a TableEntry's encoded ``match`` fields
    (tag 2 each): the runtime channel's writes go as bytes."""
    return match_bytes(sorted(
        (info.id, norm) for info, km in zip(table.info.match_fields, keys, strict=False)
        if (norm := _norm_from_switch(info, km)) is not None))


def match_bytes(norms: Sequence[tuple[int, Norm]]) -> bytes:
    """Canonical matches (field id, norm), in field-id order, as a TableEntry's encoded
    ``match`` fields (tag 2 each)."""
    return b"".join(encoding.field(b"\x12", field_match_bytes(fid, norm)) for fid, norm in norms)


# FieldMatch: field_id 1; the kind's message: exact 2, ternary 3, lpm 4, range 6,
# optional 7 (p4runtime.proto), each holding value/low 1 and mask/high 2 (bytes) or
# prefix_len 2 (varint)
_KIND_TAGS = {"exact": b"\x12", "ternary": b"\x1a", "lpm": b"\x22", "range": b"\x32",
              "optional": b"\x3a"}


def field_match_bytes(fid: int, norm: Norm) -> bytes:
    """A canonical FieldMatch, encoded: what ``_field_match(...).SerializeToString()``
    gives."""
    kind, a, b = norm
    field, enc = encoding.field, bytestrings.encode
    if kind == "lpm":
        body = field(b"\x0a", enc(a)) + b"\x10" + encoding.varint(b)
    elif kind in ("ternary", "range"):
        body = field(b"\x0a", enc(a)) + field(b"\x12", enc(b))
    else:
        body = field(b"\x0a", enc(a))
    return b"\x08" + encoding.varint(fid) + field(_KIND_TAGS[kind], body)


def _norm_from_switch(info: MF, km: KeyMatch) -> Norm | None:
    kind = _KIND.get(info.match_type, "exact")
    width = info.bitwidth
    full = (1 << width) - 1
    if kind == "exact":
        return ("exact", km.value, 0)
    if kind == "lpm":
        plen = km.prefix_len if km.prefix_len is not None else width
        if km.mask is not None and km.prefix_len is None:
            plen = bin(km.mask & full).count("1")
        host = (1 << (width - plen)) - 1 if width >= plen else 0
        return ("lpm", km.value & ~host, plen) if plen else None
    if kind == "ternary":
        mask = full if km.mask is None else km.mask & full
        if km.wildcard or mask == 0:
            return None
        return ("ternary", km.value & mask, mask)
    if kind == "range":
        high = km.high if km.high is not None else km.value
        if km.wildcard or (km.value == 0 and high == full):
            return None
        return ("range", km.value, high)
    if km.wildcard or (km.mask is not None and km.mask == 0):
        return None
    return ("optional", km.value, 0)


def key_of(fields: list[p4runtime_pb2.FieldMatch], table: TableIndex,
           priority: int) -> MatchKey:
    """The canonical key of FieldMatches already in canonical form."""
    given = {fm.field_id: _normalise(table.plans[fm.field_id], fm) for fm in fields}
    return (tuple(sorted(given.items())), priority)
