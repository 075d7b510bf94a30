#!/usr/bin/env python3
"""run-tap.py TESTDIR [pytest args] - run pytest and report every test case as one TAP line.

The meson test `python` runs this with protocol 'tap', so tests/check-all counts each pytest case.
TAP goes to the real stdout; pytest's own report (failures with their tracebacks) goes to stderr,
which meson keeps in the test log.
"""
import os
import sys

import pytest


class TapReport:
    """pytest plugin: the worst outcome of a test's setup/call/teardown, one TAP line per test."""

    def __init__(self, out):
        self.out = out
        self.n = 0
        self.outcome = {}

    def emit(self, ok, name, directive=""):
        self.n += 1
        self.out.write(f"{'ok' if ok else 'not ok'} {self.n} - {name}{directive}\n")
        self.out.flush()

    def pytest_collectreport(self, report):
        if report.failed:
            self.emit(False, f"collect {report.nodeid or '.'}")

    def pytest_runtest_logreport(self, report):
        prev = self.outcome.get(report.nodeid)
        if report.failed:
            self.outcome[report.nodeid] = ("failed", "")
        elif report.skipped and (prev is None or prev[0] == "passed"):  # pytest.skip() in the test body
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self.outcome[report.nodeid] = ("skipped", reason)
        elif prev is None:
            self.outcome[report.nodeid] = ("passed", "")

    def pytest_runtest_logfinish(self, nodeid, location):
        status, reason = self.outcome.pop(nodeid, ("passed", ""))
        if status == "skipped":
            self.emit(True, nodeid, f" # SKIP {reason}")
        else:
            self.emit(status == "passed", nodeid)

    def pytest_sessionfinish(self, session, exitstatus):
        self.out.write(f"1..{self.n}\n")
        self.out.flush()


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: run-tap.py TESTDIR [pytest args]\n")
        return 2
    tap = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    rc = pytest.main(["-p", "no:cacheprovider", "-rfEs", sys.argv[1]] + sys.argv[2:], plugins=[TapReport(tap)])
    return 0 if rc in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) else int(rc)


if __name__ == "__main__":
    sys.exit(main())
