"""A small P4Runtime client shared by the controller and the PTF suites.

- :mod:`.p4info` — load a P4Info and look objects up by name (full name, alias or any
  unique dotted suffix, as p4runtime-shell users write them);
- :mod:`.values` — p4runtime-shell value syntax (``10.0.0.0/8``, ``v&&&m``, ``lo..hi``,
  MAC/IP strings, ints) to P4Runtime byte strings and back;
- :mod:`.entities` — build table entries, counters, registers, multicast groups and
  clone sessions by name;
- :mod:`.client` — connect, arbitrate, set the pipeline, Read, Write batches,
  reconnect; :mod:`.errors` — failures as readable exceptions.
"""

from controlplane.p4rt.client import Client
from controlplane.p4rt.entities import EntityBuilder
from controlplane.p4rt.errors import P4RuntimeClientError, P4RuntimeWriteError
from controlplane.p4rt.p4info import P4InfoIndex, load_p4info

__all__ = ["Client", "EntityBuilder", "P4InfoIndex", "P4RuntimeClientError",
           "P4RuntimeWriteError", "load_p4info"]
