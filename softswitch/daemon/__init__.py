"""The running switch: ``softswitch run`` and everything that serves it.

The wing's layers, bottom up: ``ports`` (frames in and out, the port loop),
``device`` (the one device: pipeline, switch, arbitration and packet I/O behind one
lock), ``forwarding`` (the packet path on the wall clock: ports, pipeline, traffic
manager, ports), then the servers that drive the device — ``rpc``
(the P4Runtime gRPC server and its lanes), ``process`` (that server in a process of
its own), ``cli_channel`` (the runtime CLI channel) and ``idle_timeouts`` — and at the
top ``main``, which builds and wires them. What a P4Runtime request means lives in
:mod:`softswitch.p4runtime`; this package only serves it.
"""
