"""A P4Runtime server for softswitch that behaves like ``simple_switch_grpc``'s (PI).

Users' P4Runtime tools (p4runtime-shell, controllers, PTF tests) talk to softswitch
exactly as they talk to BMv2, so the server follows the P4Runtime specification and,
where the specification leaves room, PI's choices (error codes, arbitration messages).

Modules, from the wire inwards:

* :mod:`server` — the gRPC servicer; :mod:`client` — a small client for tests/scripts;
* :mod:`arbitration` — election ids, roles, primary/backup notifications;
* :mod:`device` — the one switch, its lock, pipeline commits, packet paths;
* :mod:`pipeline` — device configs (P4 source or softswitch artifact), P4Info checks;
* :mod:`runtime` — Write batches (atomicity) and Read requests of one pipeline;
* entity translation: :mod:`tables`, :mod:`matches`, :mod:`actions`, :mod:`profiles`,
  :mod:`externs`, :mod:`meters`, :mod:`replication`, :mod:`valuesets`;
* stream features: :mod:`packetio` (controller headers), :mod:`digests`, :mod:`idle`;
* plumbing: :mod:`errors`, :mod:`bytestrings`, :mod:`p4index`, :mod:`undo`, :mod:`wire`.
"""
