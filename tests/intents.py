"""Intent YAML for tests: a switch's forwarding keys written from Python data.

``forwarding`` returns the ``next_hops``, ``ecmp_groups`` and ``routes`` keys of one
switch item of ``switches:``, indented for it, with braces doubled: the tests' intent
texts are ``str.format`` templates (``{address}``, ``{device_id}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def forwarding(next_hops: Sequence[tuple[str, int, str]], routes: Sequence[tuple[str, str]],
               ecmp_groups: Mapping[str, Sequence[str]] | None = None) -> str:
    """``next_hops`` as (name, port, dst_mac), ``routes`` as (prefix, next hop or ECMP
    group name), ``ecmp_groups`` as name -> member next hops."""
    groups = ecmp_groups or {}
    lines = ["    next_hops:"]
    lines += [f'      - {{{{name: {name}, port: {port}, dst_mac: "{mac}"}}}}'
              for name, port, mac in next_hops]
    if groups:
        lines.append("    ecmp_groups:")
        lines += [f"      - {{{{name: {name}, members: [{', '.join(members)}]}}}}"
                  for name, members in groups.items()]
    lines.append("    routes:")
    lines += [f"      - {{{{prefix: {prefix}, "
              f"{'ecmp_group' if to in groups else 'next_hop'}: {to}}}}}"
              for prefix, to in routes]
    return "\n".join(lines) + "\n"
