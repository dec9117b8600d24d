"""``--p4runtime-process``: the P4Runtime gRPC service in a process of its own, its link
to the switch, and the switch's side of that link."""
