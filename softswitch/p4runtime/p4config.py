"""PI's ``p4.tmp.P4DeviceConfig``: the wrapper around ``p4_device_config`` that BMv2's
P4Runtime server unwraps and p4lang/tutorials' ``p4runtime_lib`` sends.

Its schema (PI's ``proto/p4/tmp/p4config.proto``: ``bool reassign = 1; Extras extras
= 2`` with ``map<string, string> kv = 1``; ``bytes device_data = 3``) is built here as
a descriptor in a private pool, so a client's own ``p4config_pb2`` loaded in the same
process cannot clash with it, and the bytes are decoded and encoded by protobuf.
:func:`unwrap` recognises a wrapper by its first byte (the tag of one of its fields,
a control character no P4 source or JSON starts with) and refuses one that does not
parse or carries fields the schema lacks; :func:`wrap` builds one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from softswitch.p4runtime import errors

WRAPPER = "p4.tmp.P4DeviceConfig"
# The first byte of a serialized P4DeviceConfig: the tag of field 1 (varint), 2 or 3
# (length-delimited).
_FIELD_TAGS = (0x08, 0x12, 0x1A)


@dataclass
class Wrapper:
    """The fields of a ``p4.tmp.P4DeviceConfig``."""

    reassign: bool
    extras: dict[str, str]
    device_data: bytes


@functools.cache
def message_class() -> Any:
    """The protobuf message class of ``p4.tmp.P4DeviceConfig``."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="p4/tmp/p4config.proto", package="p4.tmp",
                                             syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto  # noqa: N806 - protobuf's own name
    msg = fdp.message_type.add(name="P4DeviceConfig")
    extras = msg.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    for number, name in ((1, "key"), (2, "value")):
        entry.field.add(name=name, number=number, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    msg.field.add(name="reassign", number=1, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    msg.field.add(name="extras", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".p4.tmp.P4DeviceConfig.Extras")
    msg.field.add(name="device_data", number=3, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(WRAPPER))


def unwrap(data: bytes) -> Wrapper | None:
    """The wrapper's fields when ``data`` is a serialized ``p4.tmp.P4DeviceConfig``;
    None when the bytes are the config itself."""
    if not data or data[0] not in _FIELD_TAGS:
        return None
    from google.protobuf import message as pb_message
    from google.protobuf.unknown_fields import UnknownFieldSet

    wrapper = message_class()()
    try:
        wrapper.ParseFromString(data)
    except pb_message.DecodeError as exc:
        raise errors.invalid(f"p4_device_config starts like a {WRAPPER} but does not "
                             f"parse as one: {exc}") from None
    if len(UnknownFieldSet(wrapper)):
        raise errors.invalid(f"p4_device_config starts like a {WRAPPER} but has fields "
                             "PI's p4/tmp/p4config.proto does not define (reassign = 1, "
                             "extras = 2, device_data = 3)")
    return Wrapper(wrapper.reassign, dict(wrapper.extras.kv), bytes(wrapper.device_data))


def wrap(device_data: bytes, reassign: bool = True,
         extras: dict[str, str] | None = None) -> bytes:
    """A serialized ``p4.tmp.P4DeviceConfig`` around ``device_data``, as p4lang/tutorials'
    ``p4runtime_lib`` sends it (``reassign`` set)."""
    wrapper = message_class()(reassign=reassign, device_data=device_data)
    wrapper.extras.kv.update(extras or {})
    return wrapper.SerializeToString(deterministic=True)
