"""A P4Runtime server for softswitch that behaves like ``simple_switch_grpc``'s (PI).

Users' P4Runtime tools (p4runtime-shell, controllers, PTF tests) talk to softswitch
exactly as they talk to BMv2, so the server follows the P4Runtime specification and,
where the specification leaves room, PI's choices (error codes, arbitration messages).

Modules: :mod:`errors` (gRPC status and per-update error details), :mod:`bytestrings`
(P4Runtime byte strings ⇄ ints), :mod:`p4index` (P4Info lookups by id),
:mod:`arbitration` (election ids, roles, primary/backup), :mod:`pipeline`
(forwarding-pipeline configs), :mod:`entities` and its siblings (entity ⇄
``SwitchControl`` translation), :mod:`device` (the one shared, locked switch state),
:mod:`server` (the gRPC servicer).
"""
