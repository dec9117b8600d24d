"""Integer ranges as ternary (value, mask) pairs.

The intent lets operators write ranges for every match field, but the pipeline keys
some fields (DSCP, ECN, IP protocol, VNI) as ternary. A range splits into the fewest
aligned power-of-two blocks, each one ternary entry (``8..15`` is one, ``1..6`` four).
"""

from __future__ import annotations


def range_to_ternary(low: int, high: int, width: int) -> list[tuple[int, int]]:
    """(value, mask) pairs whose union is exactly low..high (mask 0 = wildcard)."""
    full = (1 << width) - 1
    if not 0 <= low <= high <= full:
        raise ValueError(f"range {low}..{high} does not fit {width} bits")
    out: list[tuple[int, int]] = []
    while low <= high:
        size = low & -low if low else 1 << width
        while size > high - low + 1:
            size >>= 1
        out.append((low, full & ~(size - 1)))
        low += size
    return out
