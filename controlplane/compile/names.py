"""The control-plane names of ``p4src/tailcc.p4`` the compiler writes to.

Dotted suffixes, resolved through the P4Info index, so the controller keeps working if
a control instance is renamed as long as the table names stay unique. One place to
change when docs/pipeline.md changes.
"""

TRAFFIC_CLASS = "classify.traffic_class"
SET_CLASS = "set_class"
SET_CLASS_AND_DSCP = "set_class_and_dscp"

ECN_PROFILE = "ecn_marking.ecn_profile"
SET_ECN_PROFILE = "set_ecn_profile"

FAST_CNP_POLICY = "fast_cnp.fast_cnp_policy"
ENABLE_FAST_CNP = "enable_fast_cnp"
CNP_FLOW = "fast_cnp.cnp_flow"
SET_SENDER_QP = "set_sender_qp"

PORT_VRF = "tenant.port_vrf"
SET_PORT_VRF = "set_port_vrf"
VXLAN_TERMINATION = "vxlan_decap.vxlan_termination"
TERMINATE_VXLAN = "terminate_vxlan"
SEGMENT_ACL = "segmentation.segment_acl"
SEGMENT_DEFAULT = "segmentation.segment_default"

MY_STATION = "forwarding.my_station"
SET_ROUTER_MAC = "set_router_mac"
ROUTING_V4 = "forwarding.routing_v4"
ROUTING_V6 = "forwarding.routing_v6"
SET_NEXTHOP = "set_nexthop"
SET_NEXTHOP_VXLAN = "set_nexthop_vxlan"
SET_ECMP_GROUP = "set_ecmp_group"
ECMP_GROUP = "forwarding.ecmp_group"
SET_ECMP_MEMBERS = "set_ecmp_members"
ECMP_MEMBER = "forwarding.ecmp_member"

INT_CONFIG = "int_hop.int_config"
SET_SWITCH_ID = "set_switch_id"

# defines.p4: Fast CNP clones go to mirror session TAILCC_CNP_SESSION.
CNP_SESSION = 1024
CNP_FLOWS = 8192
