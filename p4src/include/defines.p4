/*
 * tailcc: constants and type aliases used by every other file.
 *
 * Everything a deployment may want to change at compile time is a #define
 * guarded by #ifndef, so `p4c -DCPU_PORT=510 ...` works without editing the
 * source.  Everything the controller's intent file changes at run time
 * (DSCP values, thresholds, queue map) is a table entry or action parameter,
 * never a constant here.
 */
#ifndef _TAILCC_DEFINES_
#define _TAILCC_DEFINES_

/* ---- Architecture numbers (BMv2 simple_switch / v1model) ---------------- */

/* simple_switch_grpc --cpu-port N; ONOS and most tutorials use 255. */
#ifndef CPU_PORT
#define CPU_PORT 255
#endif

/* BMv2 PktInstanceType of an ingress-to-egress clone
 * (targets/simple_switch/simple_switch.h: NORMAL 0, INGRESS_CLONE 1,
 * EGRESS_CLONE 2, RECIRC 4). */
const bit<32> INSTANCE_TYPE_INGRESS_CLONE = 1;

/* Register/counter arrays indexed by (port, queue) use port * 8 + queue:
 * 9-bit ports times 3-bit priorities. */
#define PORT_QUEUE_SLOTS 4096
#define NUM_PORTS 512

/* ---- Table and array sizes ------------------------------------------------ */
#ifndef TAILCC_TABLE_SIZE
#define TAILCC_TABLE_SIZE 1024
#endif
#ifndef TAILCC_ROUTE_SIZE
#define TAILCC_ROUTE_SIZE 16384
#endif
#ifndef TAILCC_CNP_FLOWS
#define TAILCC_CNP_FLOWS 8192
#endif
#define MAX_TENANTS 4096
#define NUM_TRAFFIC_CLASSES 16
#define NUM_PARSER_ERROR_CODES 16
#define ECMP_GROUP_TABLE_SIZE 1024
#define ECMP_MEMBER_TABLE_SIZE 4096

/* ---- EtherTypes, IP protocols, well-known ports --------------------------- */
const bit<16> ETHERTYPE_IPV4        = 0x0800;
const bit<16> ETHERTYPE_IPV6        = 0x86dd;
const bit<16> ETHERTYPE_VLAN        = 0x8100;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;   /* PAUSE and PFC (802.1Qbb) */

const bit<16> MAC_CONTROL_OPCODE_PFC = 0x0101;

const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;

const bit<16> UDP_PORT_ROCEV2 = 4791;
const bit<16> UDP_PORT_VXLAN  = 4789;
/* Telemetry probes: UDP packets to this port carry an INT-MD style shim and
 * get one hop record per switch (see telemetry.p4). */
#ifndef TAILCC_INT_UDP_PORT
#define TAILCC_INT_UDP_PORT 0x1a6d
#endif
const bit<16> UDP_PORT_TAILCC_INT = TAILCC_INT_UDP_PORT;

/* ---- ECN codepoints (RFC 3168) ------------------------------------------- */
const bit<2> ECN_NOT_ECT = 0b00;
const bit<2> ECN_ECT1    = 0b01;
const bit<2> ECN_ECT0    = 0b10;
const bit<2> ECN_CE      = 0b11;

/* ---- RoCEv2 (IBTA Annex A17) -------------------------------------------- */
const bit<8>  BTH_OPCODE_CNP      = 0x81;
const bit<16> BTH_PKEY_DEFAULT    = 0xffff;
/* RC opcodes that carry a RETH after the BTH. */
const bit<8>  RC_RDMA_WRITE_FIRST          = 0x06;
const bit<8>  RC_RDMA_WRITE_ONLY           = 0x0a;
const bit<8>  RC_RDMA_WRITE_ONLY_IMM       = 0x0b;
const bit<8>  RC_RDMA_READ_REQUEST         = 0x0c;
/* RC opcodes that carry an AETH after the BTH. */
const bit<8>  RC_RDMA_READ_RESPONSE_FIRST  = 0x0d;
const bit<8>  RC_RDMA_READ_RESPONSE_LAST   = 0x0f;
const bit<8>  RC_RDMA_READ_RESPONSE_ONLY   = 0x10;
const bit<8>  RC_ACKNOWLEDGE               = 0x11;
const bit<8>  RC_ATOMIC_ACKNOWLEDGE        = 0x12;

/* A switch-generated CNP: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 +
 * 16 reserved bytes + 4 ICRC = 74 bytes (78 with an 802.1Q tag). */
const bit<16> CNP_IPV4_TOTAL_LEN = 60;
const bit<16> CNP_UDP_LEN        = 40;
const bit<32> CNP_FRAME_LEN      = 74;
const bit<32> VLAN_TAG_LEN       = 4;

/* Fast CNP clone: one mirror session, which the controller points at the
 * "recirculation port", a port number no link uses (intent default 510).
 * There egress builds the CNP and recirculates it; its second pass leaves by
 * the sender's port in the CNP queue (fast_cnp.p4 says why). */
#ifndef TAILCC_CNP_SESSION
#define TAILCC_CNP_SESSION 1024
#endif
const bit<32> CNP_SESSION = TAILCC_CNP_SESSION;
/* @field_list indices: what a Fast CNP clone carries to egress, and what the
 * recirculated CNP keeps for its second pass. */
const bit<8> FL_FAST_CNP    = 1;
const bit<8> FL_CNP_RELEASE = 2;

/* digest() receiver id of qp_learn_digest_t (P4Runtime reads it by type). */
const bit<32> DIGEST_QP_LEARN = 1;

/* ---- VXLAN (RFC 7348) ----------------------------------------------------- */
const bit<8>  VXLAN_FLAGS_VNI_VALID = 0x08;
/* Outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8. */
const bit<16> VXLAN_ENCAP_IP_BYTES  = 50;   /* added to inner IPv4 total length
                                               (outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14) */
const bit<16> VXLAN_ENCAP_UDP_BYTES = 30;   /* UDP 8 + VXLAN 8 + inner Ethernet 14 */

/* ---- Telemetry hop record ------------------------------------------------- */
#define MAX_INT_HOPS 8
const bit<16> INT_HOP_BYTES = 16;

/* ---- Traffic classes ------------------------------------------------------ */
/* A class id is whatever the controller's intent gives it (traffic_class
 * entries set it; counters and fast_cnp_policy key on it).  The default
 * profile (controlplane/profiles/default.yaml) numbers them: 0 best effort,
 * 1 front-end API, 2 training bulk, 3 cold KV migration, 4 storage, 5 MoE
 * all-to-all, 6 TP/PP compute, 7 scheduling signals, 8 hot KV-cache, 9 CNP,
 * 10 cluster control.  Only "no class yet" is fixed here. */
typedef bit<4> TrafficClass_t;
const TrafficClass_t TC_BEST_EFFORT   = 0;

/* ---- Parser-error codes (counter index and policy-table key) ------------- */
typedef bit<4> ParserErrorCode_t;
const ParserErrorCode_t PERR_NONE            = 0;
const ParserErrorCode_t PERR_PACKET_TOO_SHORT = 1;
const ParserErrorCode_t PERR_NO_MATCH        = 2;
const ParserErrorCode_t PERR_STACK_OOB       = 3;
const ParserErrorCode_t PERR_HEADER_TOO_SHORT = 4;
const ParserErrorCode_t PERR_IPV4_VERSION    = 5;
const ParserErrorCode_t PERR_IPV4_IHL        = 6;
const ParserErrorCode_t PERR_IPV6_VERSION    = 7;
const ParserErrorCode_t PERR_CHECKSUM        = 8;
const ParserErrorCode_t PERR_OTHER           = 15;

/* ---- Fast CNP outcome counter indices ------------------------------------ */
const bit<32> CNP_STAT_SENT         = 0;
const bit<32> CNP_STAT_UNRESOLVED   = 1;   /* no (src, dst, dst QP) -> sender QP entry */
const bit<32> CNP_STAT_RATE_LIMITED = 2;
/* (CNPs built in egress: FastCnpBuilder's fast_cnp_built_counter.) */
#define CNP_STAT_SLOTS 4

/* ---- Drop-reason counter indices ----------------------------------------- */
const bit<32> DROP_PARSER_ERROR   = 0;
const bit<32> DROP_PFC            = 1;
const bit<32> DROP_RFC6040        = 2;   /* outer CE + inner Not-ECT */
const bit<32> DROP_SEGMENT_DENY   = 3;
const bit<32> DROP_TTL_EXPIRED    = 4;
const bit<32> DROP_NO_ROUTE       = 5;
/* (Not-ECT packets dropped above an ECN profile's threshold are counted in
 * egress, per (port, queue): ecn_marking.p4's ecn_drop_counter.) */
#define DROP_REASON_SLOTS 8

/* ---- Type aliases --------------------------------------------------------- */
typedef bit<9>  PortId_t;
typedef bit<48> MacAddr_t;
typedef bit<32> Ipv4Addr_t;
typedef bit<128> Ipv6Addr_t;
typedef bit<12> Vrf_t;
typedef bit<24> Vni_t;
typedef bit<24> Qpn_t;
typedef bit<19> QDepth_t;
#define QDEPTH_MAX 19w0x7ffff
typedef bit<4>  EcnProfile_t;

#endif  /* _TAILCC_DEFINES_ */
