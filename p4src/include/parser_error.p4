/*
 * tailcc: what happens to packets the parser could not fully understand.
 *
 * v1model hands them to ingress with standard_metadata.parser_error set (and
 * checksum_error for a bad IPv4 header checksum).  We map the error to a
 * small code, count it, and let parser_error_policy decide per code: drop
 * (the default), forward with whatever was parsed, or punt to the CPU.
 * Mapping to a bit<4> code keeps the policy table's key a plain bit field,
 * which both P4Runtime and the BMv2 back end support (an `error` key is not
 * representable in P4Info).
 */
#ifndef _TAILCC_PARSER_ERROR_
#define _TAILCC_PARSER_ERROR_

#include "parser.p4"

control ParserErrorPolicy(inout headers_t hdr,
                          inout local_metadata_t meta,
                          inout standard_metadata_t standard_metadata) {

    counter(NUM_PARSER_ERROR_CODES, CounterType.packets_and_bytes) parser_error_counter;

    action drop_malformed() {
        meta.drop = 1w1;
        meta.drop_reason = (bit<8>)DROP_PARSER_ERROR;
    }

    /* Continue through the pipeline with the headers parsed so far. */
    action forward_malformed() {
    }

    action punt_malformed() {
        standard_metadata.egress_spec = CPU_PORT;
        meta.bypass = 1w1;
    }

    table parser_error_policy {
        key = {
            meta.parser_error_code : exact @name("error_code");
        }
        actions = {
            drop_malformed;
            forward_malformed;
            punt_malformed;
        }
        default_action = drop_malformed();
        size = NUM_PARSER_ERROR_CODES;
    }

    apply {
        if (standard_metadata.parser_error == error.NoError) {
            if (standard_metadata.checksum_error == 1w1) {
                meta.parser_error_code = PERR_CHECKSUM;
            } else {
                meta.parser_error_code = PERR_NONE;
            }
        } else if (standard_metadata.parser_error == error.PacketTooShort) {
            meta.parser_error_code = PERR_PACKET_TOO_SHORT;
        } else if (standard_metadata.parser_error == error.NoMatch) {
            meta.parser_error_code = PERR_NO_MATCH;
        } else if (standard_metadata.parser_error == error.StackOutOfBounds) {
            meta.parser_error_code = PERR_STACK_OOB;
        } else if (standard_metadata.parser_error == error.HeaderTooShort) {
            meta.parser_error_code = PERR_HEADER_TOO_SHORT;
        } else if (standard_metadata.parser_error == error.IPv4IncorrectVersion) {
            meta.parser_error_code = PERR_IPV4_VERSION;
        } else if (standard_metadata.parser_error == error.IPv4OptionsNotSupported) {
            meta.parser_error_code = PERR_IPV4_IHL;
        } else if (standard_metadata.parser_error == error.IPv6IncorrectVersion) {
            meta.parser_error_code = PERR_IPV6_VERSION;
        } else {
            meta.parser_error_code = PERR_OTHER;
        }

        if (meta.parser_error_code != PERR_NONE) {
            parser_error_counter.count((bit<32>)meta.parser_error_code);
            parser_error_policy.apply();
        }
    }
}

#endif  /* _TAILCC_PARSER_ERROR_ */
