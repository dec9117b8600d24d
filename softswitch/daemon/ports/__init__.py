"""Front-panel ports of ``softswitch run``: AF_PACKET raw sockets, pcap traces, and
the loop that feeds arriving frames to the switch."""
