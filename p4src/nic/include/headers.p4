/*
 * tailcc NIC: header formats, the header struct the parser fills and the user
 * metadata main_control works on.
 */
#ifndef _TAILCC_NIC_HEADERS_
#define _TAILCC_NIC_HEADERS_

#include "defines.p4"

header ethernet_t {
    MacAddr_t dst_addr;
    MacAddr_t src_addr;
    bit<16>   ether_type;
}

header ipv4_t {
    bit<4>     version;
    bit<4>     ihl;
    bit<6>     dscp;
    bit<2>     ecn;
    bit<16>    total_len;
    bit<16>    identification;
    bit<3>     flags;
    bit<13>    frag_offset;
    bit<8>     ttl;
    bit<8>     protocol;
    bit<16>    hdr_checksum;
    Ipv4Addr_t src_addr;
    Ipv4Addr_t dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

/* RoCEv2 Base Transport Header, 12 bytes. */
header bth_t {
    bit<8>  opcode;
    bit<1>  se;
    bit<1>  migreq;
    bit<2>  pad_count;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  rsvd0;
    Qpn_t   dst_qp;
    bit<1>  ack_req;
    bit<7>  rsvd1;
    bit<24> psn;
}

/* ACK Extended Transport Header: a NAK has syndrome 0b011xxxxx. */
header aeth_t {
    bit<8>  syndrome;
    bit<24> msn;
}

/* A CNP's body after its BTH: 16 reserved bytes and the ICRC (built, never parsed). */
header cnp_body_t {
    bit<64> rsvd0;
    bit<64> rsvd1;
    bit<32> icrc;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    tcp_t      tcp;
    bth_t      bth;
    aeth_t     aeth;
    cnp_body_t cnp_body;
}

struct nic_metadata_t {
    bit<1>     is_roce;
    bit<16>    l4_sport;
    bit<16>    l4_dport;
    NicClass_t nic_class;
    bit<8>     queue;          /* -> ostd.class_of_service */
    bit<1>     classified;
    bit<1>     urgent;         /* small urgent message: the urgent queue */
    bit<16>    urgent_max_len; /* IPv4 total length at or below which a message is small */
    bit<8>     ev_count;       /* entropy values to spray this QP over (1..16) */
    bit<16>    ev_base;        /* first EV (a multiple of 16) */
    QpSlot_t   qp_slot;
    bit<1>     has_qp;
    Qpn_t      peer_qp;        /* receiver CNP: the sender's QP */
    bit<1>     fast_path;      /* NAK or trimmed: straight to the host */
    bit<8>     aeth_syndrome;  /* of an ACK/NAK (0 when there is no AETH) */
    bit<32>    flow_id;
}

#endif
