/*
 * tailcc: header formats, the header struct the parser fills, and the
 * user metadata that travels from ingress to egress.
 */
#ifndef _TAILCC_HEADERS_
#define _TAILCC_HEADERS_

#include "defines.p4"

/* ---- CPU port headers ------------------------------------------------------
 * P4Runtime PacketIn/PacketOut metadata.  Both are a whole number of bytes
 * (BMv2 and P4Runtime servers require it). */
@controller_header("packet_in")
header packet_in_header_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_header_t {
    bit<9> egress_port;
    bit<7> _pad;
}

/* ---- L2 ------------------------------------------------------------------ */
header ethernet_t {
    MacAddr_t dst_addr;
    MacAddr_t src_addr;
    bit<16>   ether_type;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

/* MAC control frame (EtherType 0x8808): PAUSE is opcode 0x0001, PFC 0x0101. */
header mac_control_t {
    bit<16> opcode;
}

/* IEEE 802.1Qbb PFC body: priority-enable vector and eight pause times
 * (quanta of 512 bit times). */
header pfc_t {
    bit<16> class_enable;
    bit<16> pause_time0;
    bit<16> pause_time1;
    bit<16> pause_time2;
    bit<16> pause_time3;
    bit<16> pause_time4;
    bit<16> pause_time5;
    bit<16> pause_time6;
    bit<16> pause_time7;
}

/* ---- L3 ------------------------------------------------------------------ */
/* DSCP and ECN are separate fields so that classification, rewrite and
 * marking never need bit-slicing of a shared TOS byte. */
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

header ipv6_t {
    bit<4>     version;
    bit<6>     dscp;
    bit<2>     ecn;
    bit<20>    flow_label;
    bit<16>    payload_len;
    bit<8>     next_hdr;
    bit<8>     hop_limit;
    Ipv6Addr_t src_addr;
    Ipv6Addr_t dst_addr;
}

/* ---- L4 ------------------------------------------------------------------ */
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

/* ---- RoCEv2 ----------------------------------------------------------------
 * Base Transport Header, 12 bytes. */
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

/* ACK Extended Transport Header (ACK, READ responses), 4 bytes. */
header aeth_t {
    bit<8>  syndrome;
    bit<24> msn;
}

/* RDMA Extended Transport Header (WRITE first/only, READ request), 16 bytes. */
header reth_t {
    bit<64> vaddr;
    bit<32> rkey;
    bit<32> dma_len;
}

/* The body of a CNP after its BTH: 16 reserved bytes and the ICRC.
 * Only ever emitted by the Fast CNP builder (fast_cnp.p4), never parsed. */
header cnp_body_t {
    bit<64> rsvd0;
    bit<64> rsvd1;
    bit<32> icrc;
}

/* ---- VXLAN (RFC 7348) ----------------------------------------------------- */
header vxlan_t {
    bit<8>  flags;
    bit<24> rsvd0;
    Vni_t   vni;
    bit<8>  rsvd1;
}

/* ---- Telemetry (INT-MD style, see telemetry.p4) -------------------------- */
header int_shim_t {
    bit<8>  hop_count;   /* records that follow */
    bit<8>  max_hops;    /* the sender's budget; switches stop adding at it */
    bit<16> rsvd;
}

header int_hop_t {
    bit<32> switch_id;
    bit<7>  _pad0;
    bit<9>  ingress_port;
    bit<7>  _pad1;
    bit<9>  egress_port;
    bit<5>  _pad2;
    bit<3>  queue_id;
    bit<5>  _pad3;
    bit<19> enq_qdepth;
    bit<32> deq_timedelta;
}

/* Parse and deparse order is the order of this struct. */
struct headers_t {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    ethernet_t          ethernet;
    vlan_t              vlan;
    mac_control_t       mac_control;
    pfc_t               pfc;
    ipv4_t              ipv4;
    ipv6_t              ipv6;
    udp_t               udp;
    tcp_t               tcp;
    int_shim_t          int_shim;
    int_hop_t[MAX_INT_HOPS] int_hops;
    vxlan_t             vxlan;
    ethernet_t          inner_ethernet;
    ipv4_t              inner_ipv4;
    udp_t               inner_udp;
    tcp_t               inner_tcp;
    bth_t               inner_bth;
    bth_t               bth;
    aeth_t              aeth;
    reth_t              reth;
    cnp_body_t          cnp_body;
}

/* ---- Metadata ----------------------------------------------------------------
 * Lookup fields: a normalised view of "what this traffic is", taken from the
 * innermost headers the parser understood (inner headers of a VXLAN packet,
 * the outer ones otherwise), so classification never keys on fields of an
 * invalid header. */
struct lookup_metadata_t {
    bit<1>  is_ipv4;
    bit<1>  is_ipv6;
    bit<1>  is_vxlan;     /* arrived VXLAN-encapsulated and still is (transit) */
    bit<1>  is_roce;      /* a BTH was parsed */
    bit<6>  dscp;
    bit<2>  ecn;
    bit<8>  ip_proto;
    bit<16> l4_sport;
    bit<16> l4_dport;
    bit<8>  bth_opcode;
    Qpn_t   bth_dst_qp;
    Vni_t   vni;
}

/* Sent to the controller when a congested RoCEv2 flow has no cnp_flow entry:
 * the controller pairs it with the reverse direction's flow (whose dst_qp is
 * this flow's sender QP) and installs the mapping. */
struct qp_learn_digest_t {
    Ipv4Addr_t src_addr;
    Ipv4Addr_t dst_addr;
    Qpn_t      dst_qp;
}

struct local_metadata_t {
    lookup_metadata_t lkp;
    qp_learn_digest_t qp_learn;

    /* tenant and forwarding */
    Vrf_t      vrf;
    bit<1>     decapped;       /* VXLAN terminated here */
    bit<1>     is_router_mac;
    bit<1>     routed;
    bit<1>     drop;           /* decided to drop; later stages skip */
    bit<8>     drop_reason;    /* DROP_* index of ingress_drop_counter */
    bit<1>     bypass;         /* packet-out or punt: egress port chosen, skip the rest */
    bit<1>     segment_deny;
    bit<16>    ecmp_group;
    bit<1>     use_ecmp;
    bit<16>    ecmp_count;     /* members of the group (ecmp_group) */
    bit<16>    ecmp_member;    /* flow hash mod ecmp_count */
    bit<32>    flow_hash;      /* 5-tuple hash incl. the RoCE UDP source port */

    /* classification */
    TrafficClass_t tc;
    EcnProfile_t   ecn_profile;
    bit<1>         rewrite_dscp;
    bit<6>         new_dscp;

    /* parser errors */
    ParserErrorCode_t parser_error_code;

    /* VXLAN encapsulation decided by the next hop, done in egress */
    bit<1>     encap;
    Ipv4Addr_t encap_src;
    Ipv4Addr_t encap_dst;
    Vni_t      encap_vni;

    /* ECN marking */
    bit<1>     suppress_mark;   /* a Fast CNP went out and intent says "clear CE" */

    /* Fast CNP: the fields a CNP clone carries into egress (1 == FL_FAST_CNP),
     * and those its recirculated pass keeps (2 == FL_CNP_RELEASE). */
    @field_list(1)
    bit<1>     cnp_clone;
    @field_list(1)
    Qpn_t      cnp_sender_qp;
    @field_list(1)
    bit<6>     cnp_dscp;
    @field_list(1, 2)
    PortId_t   cnp_port;        /* the data's ingress port: the sender is behind it */
    @field_list(1, 2)
    bit<3>     cnp_priority;    /* the queue the CNP leaves by */
    @field_list(2)
    bit<1>     cnp_release;     /* this pass carries a built CNP to cnp_port */

    /* Fast CNP ingress scratch */
    bit<1>     cnp_flow_hit;
    bit<32>    cnp_flow_index;
    bit<1>     cnp_enabled;
    QDepth_t   cnp_qdepth_threshold;
    bit<48>    cnp_interval;
    bit<1>     cnp_keep_ce;

    /* INT parsing */
    bit<8>     int_remaining;
}

#endif  /* _TAILCC_HEADERS_ */
