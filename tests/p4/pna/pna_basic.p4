/*
 * PNA sample: direction, pre_control, forwarding, parser errors, and the stateless and
 * indexed externs. Packet tests: tests/test_pna_samples.py.
 *
 * - main_parser verifies the IPv4 checksum with InternetChecksum; a bad one is a parser
 *   error, which main_control sees and drops on (drop_packet);
 * - pre_control marks the packet with its direction (pre_mark), main_control copies the
 *   mark into the low byte of the Ethernet source and into class_of_service;
 * - the forwarding table is keyed by the remote address, picked with SelectByDirection;
 * - Counter counts per direction, Register counts per input port (initial value 100),
 *   Hash chooses the UDP source port in 49152..49167, InternetChecksum rewrites the
 *   IPv4 checksum after the TTL decrement.
 */
#include <core.p4>
#include <pna.p4>
#include "common_headers.p4"

error { BadIPv4Checksum }

struct meta_t {
    bit<8>  pre_mark;
    bit<32> remote;
}

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    InternetChecksum() ck;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ip);
        ck.clear();
        ck.add({hdr.ip.version, hdr.ip.ihl, hdr.ip.dscp, hdr.ip.ecn, hdr.ip.total_len,
                hdr.ip.id, hdr.ip.flags, hdr.ip.frag_offset, hdr.ip.ttl, hdr.ip.protocol,
                hdr.ip.checksum, hdr.ip.src, hdr.ip.dst});
        verify(ck.get() == 0, error.BadIPv4Checksum);
        transition select(hdr.ip.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout meta_t meta,
                       in pna_pre_input_metadata_t istd,
                       inout pna_pre_output_metadata_t ostd) {
    apply {
        if (istd.direction == PNA_Direction_t.NET_TO_HOST) {
            meta.pre_mark = 1;
        } else {
            meta.pre_mark = 2;
        }
    }
}

control MainControlImpl(inout headers_t hdr, inout meta_t meta,
                        in pna_main_input_metadata_t istd,
                        inout pna_main_output_metadata_t ostd) {
    Counter<bit<32>, bit<1>>(2, PNA_CounterType_t.PACKETS_AND_BYTES) per_direction;
    Register<bit<32>, bit<8>>(256, 100) per_port;
    Hash<bit<16>>(PNA_HashAlgorithm_t.TARGET_DEFAULT) entropy;
    InternetChecksum() ck;

    action to_port(PortId_t port) {
        send_to_port(port);
    }
    action drop() {
        drop_packet();
    }
    table forward {
        key = {
            meta.remote : exact;
        }
        actions = {
            to_port;
            drop;
        }
        default_action = drop();
        size = 64;
    }
    apply {
        if (istd.parser_error != error.NoError) {
            drop_packet();
            return;
        }
        if (!hdr.ip.isValid()) {
            drop_packet();
            return;
        }
        bit<1> d = 1;
        if (istd.direction == PNA_Direction_t.NET_TO_HOST) {
            d = 0;
        }
        per_direction.count(d);
        bit<8> slot = (bit<8>)(PortIdUint_t)istd.input_port;
        per_port.write(slot, per_port.read(slot) + 1);
        meta.remote = SelectByDirection(istd.direction, hdr.ip.dst, hdr.ip.src);
        forward.apply();
        if (hdr.udp.isValid()) {
            hdr.udp.sport = entropy.get_hash(16w49152, {hdr.ip.src, hdr.ip.dst, hdr.udp.dport},
                                             16w16);
            hdr.udp.checksum = 0;
        }
        hdr.ip.ttl = hdr.ip.ttl - 1;
        ck.clear();
        ck.add({hdr.ip.version, hdr.ip.ihl, hdr.ip.dscp, hdr.ip.ecn, hdr.ip.total_len,
                hdr.ip.id, hdr.ip.flags, hdr.ip.frag_offset, hdr.ip.ttl, hdr.ip.protocol,
                hdr.ip.src, hdr.ip.dst});
        hdr.ip.checksum = ck.get();
        hdr.eth.src[7:0] = meta.pre_mark;
        ostd.class_of_service = (ClassOfService_t)meta.pre_mark;
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in meta_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.udp);
    }
}

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
