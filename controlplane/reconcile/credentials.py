"""What a switch entry of the intent says about reaching it securely: the P4Runtime TLS
files (``switches[].tls``) and the runtime channel's token file
(``switches[].runtime_token_file``, softswitch's ``--runtime-token-file``). Relative
paths are relative to the intent file's folder, as every path in an intent is."""

from __future__ import annotations

from pathlib import Path

from controlplane.intent import model as m
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.tls import TlsConfig

MAX_TOKEN_BYTES = 4096


def _base(intent: m.Intent) -> Path | None:
    return Path(intent.source).parent if intent.source else None


def switch_tls(intent: m.Intent, switch: m.Switch) -> TlsConfig | None:
    if switch.tls is None:
        return None
    t = switch.tls
    return TlsConfig.from_paths(t.ca, t.cert, t.key, t.server_name, _base(intent))


def switch_token(intent: m.Intent, switch: m.Switch) -> str | None:
    """The runtime channel token (the file's contents, whitespace stripped)."""
    if switch.runtime_token_file is None:
        return None
    path = Path(switch.runtime_token_file).expanduser()
    base = _base(intent)
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        with open(path, "rb") as f:
            token = f.read(MAX_TOKEN_BYTES).strip()
    except OSError as exc:
        raise P4RuntimeClientError(f"switch {switch.name}: runtime_token_file {path}: "
                                   f"{exc.strerror or exc}") from None
    if not token:
        raise P4RuntimeClientError(f"switch {switch.name}: runtime_token_file {path} is "
                                   "empty")
    return token.decode("utf-8", "replace")
