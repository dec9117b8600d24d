/* Headers shared by the PNA samples: Ethernet, IPv4, UDP. */
#ifndef _PNA_SAMPLE_HEADERS_
#define _PNA_SAMPLE_HEADERS_

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> id;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ip;
    udp_t      udp;
}

#endif
