"""softswitch.daemon.rpc.settings: the gRPC settings ``softswitch run`` starts with
(tests/test_p4runtime_run.py checks a running server has them and grpcio knows them)."""

from __future__ import annotations

from softswitch.daemon.rpc import settings


def test_configure_sets_the_server_experiments_once():
    env: dict[str, str] = {}
    assert settings.configure(env)
    assert env["GRPC_EXPERIMENTS"] == "-event_engine_listener"
    assert not settings.configure(env)


def test_a_users_setting_is_kept():
    env = {"GRPC_EXPERIMENTS": ""}
    assert not settings.configure(env)
    assert env == {"GRPC_EXPERIMENTS": ""}
