"""TLS for the P4Runtime server with ``simple_switch_grpc``'s own flags
(``--grpc-server-ssl``, ``--grpc-server-cacert``, ``--grpc-server-cert``,
``--grpc-server-key``, ``--grpc-server-with-client-auth``), certificates made at test
time: a TLS client works, a plaintext one does not, and with client auth a client
without a certificate (or with one from another CA) is refused."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from intents import forwarding
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.device import Device
from softswitch.daemon.main import parse_args
from softswitch.daemon.rpc.server import TlsConfig, serve
from softswitch.local_port import free_port

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key, issuer_name: str, issuer_key, ca: bool = False,
          server: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject))
               .issuer_name(_name(issuer_name)).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(obj) -> bytes:
    if hasattr(obj, "private_bytes"):
        return obj.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    return obj.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, bytes]:
    """A CA, a server and a client certificate signed by it, and a rogue client."""
    ca_key, rogue_ca_key = ec.generate_private_key(ec.SECP256R1()), \
        ec.generate_private_key(ec.SECP256R1())
    ca = _cert("tailcc test CA", ca_key, "tailcc test CA", ca_key, ca=True)
    server_key, client_key, rogue_key = (ec.generate_private_key(ec.SECP256R1())
                                         for _ in range(3))
    files = {
        "ca": _pem(ca), "server_cert": _pem(_cert("softswitch", server_key, "tailcc test CA",
                                                  ca_key, server=True)),
        "server_key": _pem(server_key),
        "client_cert": _pem(_cert("controller", client_key, "tailcc test CA", ca_key)),
        "client_key": _pem(client_key),
        "rogue_cert": _pem(_cert("intruder", rogue_key, "rogue CA", rogue_ca_key)),
        "rogue_key": _pem(rogue_key),
    }
    tmp = tmp_path_factory.mktemp("pki")
    for name, data in files.items():
        (tmp / f"{name}.pem").write_bytes(data)
    files["dir"] = str(tmp).encode()
    return files


def _capabilities(channel: grpc.Channel) -> grpc.StatusCode:
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    try:
        stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
    except grpc.RpcError as exc:
        return exc.code()
    finally:
        channel.close()
    return grpc.StatusCode.OK


def _tls_channel(port: int, pki, cert: str | None = None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=pki["ca"],
        private_key=pki[f"{cert}_key"] if cert else None,
        certificate_chain=pki[f"{cert}_cert"] if cert else None)
    return grpc.secure_channel(f"127.0.0.1:{port}", creds)


def test_tls_server(pki):
    server, port = serve(Device(), "127.0.0.1:0",
                         tls=TlsConfig(pki["server_cert"], pki["server_key"]))
    try:
        assert _capabilities(_tls_channel(port, pki)) == grpc.StatusCode.OK
        assert _capabilities(grpc.insecure_channel(f"127.0.0.1:{port}")) == \
            grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(0).wait()


def test_client_auth_refuses_clients_without_a_good_certificate(pki):
    tls = TlsConfig(pki["server_cert"], pki["server_key"], pki["ca"], client_auth=True)
    server, port = serve(Device(), "127.0.0.1:0", tls=tls)
    try:
        assert _capabilities(_tls_channel(port, pki, "client")) == grpc.StatusCode.OK
        assert _capabilities(_tls_channel(port, pki)) == grpc.StatusCode.UNAVAILABLE
        assert _capabilities(_tls_channel(port, pki, "rogue")) == grpc.StatusCode.UNAVAILABLE
        assert _capabilities(grpc.insecure_channel(f"127.0.0.1:{port}")) == \
            grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(0).wait()


@pytest.mark.parametrize("frontend", [(), ("--p4runtime-process",)],
                         ids=["in-process", "front-end-process"])
def test_softswitch_run_takes_simple_switch_grpc_tls_flags(pki, frontend):
    """Also with the front end process, which serves the TLS (and a Write over it)."""
    d = Path(pki["dir"].decode())
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
         "--grpc-server-addr", f"127.0.0.1:{port}", "--grpc-server-ssl",
         "--grpc-server-cert", str(d / "server_cert.pem"),
         "--grpc-server-key", str(d / "server_key.pem"),
         "--grpc-server-cacert", str(d / "ca.pem"), "--grpc-server-with-client-auth",
         *frontend],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        channel = _tls_channel(port, pki, "client")
        grpc.channel_ready_future(channel).result(timeout=60)
        with pytest.raises(grpc.RpcError) as refused:       # --no-p4: no pipeline
            channel.unary_unary("/p4.v1.P4Runtime/Write")(b"", timeout=10)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION, \
            refused.value.details()
        assert _capabilities(channel) == grpc.StatusCode.OK
        assert _capabilities(_tls_channel(port, pki)) == grpc.StatusCode.UNAVAILABLE
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "TLS with client certificates" in err, err


@pytest.mark.parametrize("target, message", [
    (["--grpc-server-ssl"], "needs --grpc-server-cert and --grpc-server-key"),
    (["--grpc-server-cert", "c.pem"], "need --grpc-server-ssl"),
    (["--grpc-server-ssl", "--grpc-server-cert", "c", "--grpc-server-key", "k",
      "--grpc-server-with-client-auth"], "needs --grpc-server-cacert"),
])
def test_tls_usage_errors(target, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(["--no-p4", "--", *target])
    assert exc.value.code == 1 and message in capsys.readouterr().err


def test_unreadable_certificate_is_a_user_error(tmp_path):
    (tmp_path / "key.pem").write_text("not a pem")
    proc = subprocess.run(
        [sys.executable, "-m", "softswitch", "run", "--no-p4", "--", "--grpc-server-addr",
         f"127.0.0.1:{free_port()}", "--grpc-server-ssl", "--grpc-server-cert",
         str(tmp_path / "none.pem"), "--grpc-server-key", str(tmp_path / "key.pem")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "--grpc-server-cert" in proc.stderr
    assert "cannot read" in proc.stderr and "Traceback" not in proc.stderr


def test_prometheus_exporter_binds_loopback_unless_told():
    from controlplane.cli import build_parser

    args = build_parser().parse_args(["export", "-a", "127.0.0.1:9559"])
    assert args.listen == "127.0.0.1"
    args = build_parser().parse_args(["export", "-a", "127.0.0.1:9559", "--listen", "0.0.0.0"])
    assert args.listen == "0.0.0.0"


APPLY_INTENT = """
base: default
switches:
  - name: s1
    address: 127.0.0.1:{grpc}
    device_id: 1
    runtime_address: 127.0.0.1:{runtime}
    runtime_token_file: {token}
    tls: {tls}
    router_mac: "00:aa:00:00:00:01"
    ports: [{{port: 1, scheduler: default}}, 2]
""" + forwarding([("h1", 1, "00:00:00:00:00:01"), ("h2", 2, "00:00:00:00:00:02")],
               [("10.0.1.0/24", "h1"), ("10.0.2.0/24", "h2")])


def test_tailcc_apply_over_mutual_tls_with_a_runtime_token(pki, tmp_path, capsys):
    """A whole ``tailcc apply`` (pipeline, entries, queue settings) to a softswitch that
    serves P4Runtime with mutual TLS and guards its runtime channel with a token; the
    intent names the files relative to itself. Without a client certificate the apply
    is refused by the switch; with a wrong token the queue settings are, and the whole
    apply is rolled back."""
    from controlplane.cli import main as tailcc

    d = Path(pki["dir"].decode())
    (tmp_path / "token").write_text("s3cret\n")
    (tmp_path / "wrong").write_text("guess\n")
    for name in ("ca", "client_cert", "client_key"):
        (tmp_path / f"{name}.pem").write_bytes(pki[name])
    grpc_port, runtime_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", "--no-p4", "--device-id", "1",
         "--thrift-port", str(runtime_port), "--runtime-token-file", str(tmp_path / "token"),
         "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--grpc-server-ssl",
         "--grpc-server-cert", str(d / "server_cert.pem"),
         "--grpc-server-key", str(d / "server_key.pem"),
         "--grpc-server-cacert", str(d / "ca.pem"), "--grpc-server-with-client-auth",
         "--priority-queues", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def intent(name: str, tls: str, token: str = "token") -> str:
        path = tmp_path / name
        path.write_text(APPLY_INTENT.format(grpc=grpc_port, runtime=runtime_port,
                                            token=token, tls=tls))
        return str(path)

    mutual = "{ca: ca.pem, cert: client_cert.pem, key: client_key.pem}"
    try:
        channel = _tls_channel(grpc_port, pki, "client")
        grpc.channel_ready_future(channel).result(timeout=60)
        channel.close()
        pipeline = ["--pipeline", str(Path(__file__).parents[1] / "p4src" / "tailcc.p4")]
        # no client certificate: the switch refuses the session, nothing is written
        assert tailcc(["apply", intent("server-only.yaml", "{ca: ca.pem}"), *pipeline,
                       "--timeout", "5", "-q"]) == 1
        out = capsys.readouterr()
        assert "over TLS" in out.out + out.err, out
        # a wrong runtime token: the queue commands are refused, the apply rolled back
        assert tailcc(["apply", intent("wrong.yaml", mutual, "wrong"), *pipeline,
                       "-q"]) == 1
        out = capsys.readouterr()
        assert "refused the token" in out.out + out.err, out
        assert tailcc(["apply", intent("ok.yaml", mutual), *pipeline, "-q"]) == 0
        out = capsys.readouterr()
        assert "s1: wrote" in out.out, out
        assert tailcc(["apply", intent("ok.yaml", mutual), "-q"]) == 0
        assert tailcc(["diff", intent("ok.yaml", mutual)]) == 0
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
