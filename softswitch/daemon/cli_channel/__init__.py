"""The runtime CLI channel: what P4Runtime cannot do, in ``simple_switch_CLI`` words."""
