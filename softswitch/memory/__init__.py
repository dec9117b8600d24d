"""Process memory: the allocator softswitch runs on and giving memory back after big
batches."""
