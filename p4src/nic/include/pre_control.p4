/*
 * tailcc NIC: the pre control. The NIC does no inline decryption, so it asks for
 * none; everything else happens in main_control.
 */
#ifndef _TAILCC_NIC_PRE_CONTROL_
#define _TAILCC_NIC_PRE_CONTROL_

#include "headers.p4"

control NicPreControl(in headers_t hdr, inout nic_metadata_t meta,
                      in pna_pre_input_metadata_t istd,
                      inout pna_pre_output_metadata_t ostd) {
    apply {
        ostd.decrypt = false;
    }
}

#endif
