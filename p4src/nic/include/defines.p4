/*
 * tailcc NIC: constants and type aliases shared by every file of the NIC program.
 *
 * What a deployment tunes at run time (QP -> class map, EV counts, meter and pace
 * rates, CNP policy) is a table entry or a register written by the controller from
 * the intent file; only sizes and protocol numbers are constants here.
 */
#ifndef _TAILCC_NIC_DEFINES_
#define _TAILCC_NIC_DEFINES_

typedef bit<48> MacAddr_t;
typedef bit<32> Ipv4Addr_t;
typedef bit<24> Qpn_t;
typedef bit<4>  NicClass_t;        /* semantic flow class, 16 of them */
typedef bit<10> QpSlot_t;          /* index of a QP's state in the registers */

#define NIC_QP_SLOTS 1024
#define NIC_CLASSES 16
#define NIC_TABLE_SIZE 1024
#define NIC_FLOW_TABLE_SIZE 65536

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;

const bit<2> ECN_NOT_ECT = 0b00;
const bit<2> ECN_ECT0    = 0b10;
const bit<2> ECN_CE      = 0b11;

/* RoCEv2 (IBTA Annex A17) */
const bit<8>  BTH_OPCODE_CNP   = 0x81;
const bit<8>  RC_ACKNOWLEDGE   = 0x11;
const bit<16> BTH_PKEY_DEFAULT = 0xffff;
const bit<16> CNP_IPV4_TOTAL_LEN = 60;
const bit<16> CNP_UDP_LEN        = 40;
/* Ethernet + IPv4 + UDP + BTH: what the parser extracts of a RoCEv2 packet. */
const bit<32> ROCE_HEADERS_LEN   = 54;

/* Transmit queues (pna_main_output_metadata_t.class_of_service): the NIC's traffic
 * manager serves higher numbers first when they are strict (softswitch/pna/tm.py).
 * Queue 0 is the background queue: class_policy puts cold KV migration there and the
 * controller paces it (a queue rate). */
const bit<8> QUEUE_PACED      = 1;   /* QPs over their CNP-adjusted rate */
const bit<8> QUEUE_URGENT     = 7;   /* small urgent messages, CNPs, NAK/trim fast path */

/* Receiver CNPs: at most one per QP per this many ns (DCQCN's notification point). */
const bit<64> CNP_MIN_INTERVAL_NS = 50000;
/* An EV stays "seen with CE" this long after a CNP named it (50 ms: several
 * round trips of the slowest path, long enough to steer a flow off it). */
const bit<64> EV_CE_HOLD_NS = 50000000;
/* A QP's rate recovers by 1/8 per this many ns without a CNP. */
const bit<64> RATE_RECOVERY_NS = 100000;

/* Mirror session and slot the receiver-CNP copy leaves by: the controller points
 * the session at the NIC's loopback port, where the copy re-enters as loopedback. */
const bit<16> CNP_MIRROR_SESSION = 7;
const bit<8>  CNP_MIRROR_SLOT    = 0;

/* Expire-time profile of learned flows (timeout set by the controller). */
const bit<8> FLOW_EXPIRE_PROFILE = 1;

#endif
