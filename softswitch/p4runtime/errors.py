"""P4Runtime errors: gRPC status codes and the per-update details of a failed Write.

Clients tell apart "not primary", "no pipeline", "duplicate entry" and "bad request"
only by the gRPC status code, so every user-input problem is raised as a
:class:`P4RuntimeError` carrying the code the P4Runtime specification (and PI) uses.
A failed batch Write is reported as the specification says: status ``UNKNOWN`` whose
``grpc-status-details-bin`` trailer holds a ``google.rpc.Status`` with one
``p4.v1.Error`` per update (``OK`` for the updates that succeeded), which is what
p4runtime-shell and PTF's helpers decode. Messages are PI's words where PI (BMv2's
``simple_switch_grpc``) makes the same check: tests written for it compare them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

# The trailer gRPC libraries read rich error details from (grpcio-status uses it too).
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# The message of a Write refused update by update: PI's, none (the updates' errors say it).
WRITE_FAILURE = ""


class P4RuntimeError(Exception):
    """A request the server refuses, with the gRPC status code to answer it with."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


ErrorMaker = Callable[[str], P4RuntimeError]


def _maker(code: grpc.StatusCode) -> ErrorMaker:
    """A constructor of the errors answered with ``code``."""
    def make(message: str) -> P4RuntimeError:
        return P4RuntimeError(code, message)
    return make


invalid: ErrorMaker = _maker(grpc.StatusCode.INVALID_ARGUMENT)
not_found: ErrorMaker = _maker(grpc.StatusCode.NOT_FOUND)
already_exists: ErrorMaker = _maker(grpc.StatusCode.ALREADY_EXISTS)
unimplemented: ErrorMaker = _maker(grpc.StatusCode.UNIMPLEMENTED)
failed_precondition: ErrorMaker = _maker(grpc.StatusCode.FAILED_PRECONDITION)
permission_denied: ErrorMaker = _maker(grpc.StatusCode.PERMISSION_DENIED)
out_of_range: ErrorMaker = _maker(grpc.StatusCode.OUT_OF_RANGE)
resource_exhausted: ErrorMaker = _maker(grpc.StatusCode.RESOURCE_EXHAUSTED)


def rpc_code(code: grpc.StatusCode) -> int:
    """The numeric ``google.rpc.Code`` of a gRPC status code."""
    return int(code.value[0])


def update_error(error: P4RuntimeError | None) -> p4runtime_pb2.Error:
    """The ``p4.v1.Error`` of one update (``OK`` when it succeeded)."""
    if error is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    return p4runtime_pb2.Error(canonical_code=rpc_code(error.code), message=error.message)


def write_failure_status(results: list[P4RuntimeError | None]) -> status_pb2.Status:
    """The ``google.rpc.Status`` of a Write in which at least one update failed."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=WRITE_FAILURE)
    for result in results:
        detail = any_pb2.Any()
        detail.Pack(update_error(result))
        status.details.append(detail)
    return status


def write_failure_bytes(results: list[P4RuntimeError | None]) -> bytes:
    """:func:`write_failure_status`, serialized — built from cached encodings of each
    distinct per-update error, so a failed batch of many updates does not build one
    message per update."""
    from softswitch.p4runtime import encoding

    type_url = encoding.field(b"\x0a", b"type.googleapis.com/p4.v1.Error")
    cache: dict[tuple[int, str], bytes] = {}
    parts = [encoding.varint(8) + encoding.varint(code_pb2.UNKNOWN),       # Status.code = 1
             ]                          # Status.message (PI's: empty) is left out
    for result in results:
        key = (0, "") if result is None else (rpc_code(result.code), result.message)
        detail = cache.get(key)
        if detail is None:
            error = update_error(result).SerializeToString()
            value = encoding.field(b"\x12", error) if error else b""   # Any.value = 2
            detail = encoding.field(b"\x1a", type_url + value)        # Status.details = 3
            cache[key] = detail
        parts.append(detail)
    return b"".join(parts)


def abort_with_details(context: grpc.ServicerContext,
                       status: status_pb2.Status | bytes) -> None:
    """End the RPC with ``status`` and its details in the standard trailer (raises)."""
    if isinstance(status, bytes):
        data, status = status, status_pb2.Status(code=code_pb2.UNKNOWN,
                                                 message=WRITE_FAILURE)
    else:
        data = status.SerializeToString()
    context.set_trailing_metadata(((STATUS_DETAILS_KEY, data),))
    context.abort(_grpc_code(status.code), status.message)


def _grpc_code(number: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


def details_of(error: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """Client side: the per-update errors carried by a failed Write (empty if none)."""
    return details_in(error.trailing_metadata() or ())


def details_in(trailing: Iterable[tuple[str, Any]]) -> list[p4runtime_pb2.Error]:
    """The per-update errors in a failed Write's trailing metadata (empty if none)."""
    for key, value in trailing:
        if key == STATUS_DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
            out = []
            for detail in status.details:
                err = p4runtime_pb2.Error()
                detail.Unpack(err)
                out.append(err)
            return out
    return []


def internal(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INTERNAL, message)


def aborted(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.ABORTED, message)
