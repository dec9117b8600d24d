/*
 * tailcc: which tenant (VRF) a packet belongs to.
 *
 * Untunnelled traffic takes the VRF of its ingress port; VXLAN traffic that
 * this switch terminates takes the VRF of its VNI (vxlan.p4 overrides it).
 * VRF 0 is the default/underlay VRF.
 */
#ifndef _TAILCC_TENANT_
#define _TAILCC_TENANT_

#include "headers.p4"

control TenantMap(inout headers_t hdr,
                  inout local_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    action set_port_vrf(Vrf_t vrf) {
        meta.vrf = vrf;
    }

    table port_vrf {
        key = {
            standard_metadata.ingress_port : exact @name("ingress_port");
        }
        actions = {
            set_port_vrf;
            NoAction;
        }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    apply {
        meta.vrf = 12w0;
        port_vrf.apply();
    }
}

#endif  /* _TAILCC_TENANT_ */
