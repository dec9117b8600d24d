"""``tailcc apply --every`` stops on SIGTERM even when Python drops the interrupt."""

from __future__ import annotations

import contextlib
import signal

from controlplane.commands.intent_cmds import _stop_on_sigterm


def test_sigterm_is_remembered_when_its_interrupt_is_dropped():
    """The handler's KeyboardInterrupt can be swallowed (raised inside a finalizer or a
    weakref callback: "Exception ignored in ..."); the stop event still says stop, and
    the previous handler comes back afterwards."""
    before = signal.getsignal(signal.SIGTERM)
    restore, stopped = _stop_on_sigterm()
    try:
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler) and not stopped.is_set()
        with contextlib.suppress(KeyboardInterrupt):   # what a finalizer does with it
            handler(signal.SIGTERM, None)
        assert stopped.is_set()
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) is before
