"""Colour and progress only for terminals; captured output stays plain."""

import io

from controlplane.terminal import Progress, colour_enabled, paint


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_when_not_a_terminal(monkeypatch):
    monkeypatch.delenv("TAILCC_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert paint("x", "red", io.StringIO()) == "x"
    assert paint("x", "red", Tty()) == "\033[31mx\033[0m"


def test_no_color_and_forcing(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_enabled(Tty())
    monkeypatch.setenv("TAILCC_COLOR", "always")
    assert colour_enabled(io.StringIO())
    monkeypatch.setenv("TAILCC_COLOR", "never")
    assert not colour_enabled(Tty())


def test_progress_writes_only_to_a_terminal():
    quiet = io.StringIO()
    p = Progress(3, "reconciled", quiet)
    p.step("s1")
    p.finish()
    assert quiet.getvalue() == ""
    tty = Tty()
    p = Progress(2, "reconciled", tty)
    p.step("s1")
    p.step("s2")
    p.finish()
    assert "[1/2] reconciled: s1" in tty.getvalue() and "[2/2] reconciled: s2" in tty.getvalue()
