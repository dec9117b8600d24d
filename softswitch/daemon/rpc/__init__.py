"""The P4Runtime gRPC server of ``softswitch run`` and its serving lanes."""
