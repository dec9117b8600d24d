/*
 * tailcc NIC: where a packet leaves. `port_map`, keyed by the input port, names the
 * output port (host port -> network port and back; the loopback port -> the network
 * port receiver CNPs leave by). No entry: the packet is dropped.
 */
#ifndef _TAILCC_NIC_FORWARDING_
#define _TAILCC_NIC_FORWARDING_

#include "headers.p4"

control PortForwarding(in PortId_t input_port) {
    action to_port(PortId_t port) {
        send_to_port(port);
    }
    action drop() {
        drop_packet();
    }
    table port_map {
        key = {
            input_port : exact @name("input_port");
        }
        actions = {
            to_port;
            drop;
        }
        default_action = drop();
        size = 64;
    }
    apply {
        port_map.apply();
    }
}

#endif
