"""Every gate-junit.xml a gate test writes is checked against the JUnit schema (tests/gate/junit.xsd) with lxml.

After each test of tests/gate, the session's temporary folders are searched for gate-junit.xml files not yet
checked (a module fixture's folder included); each must be well-formed XML that validates, or the test errors
naming the file and lxml's complaint. `JUNIT_CHECKED` holds the files checked so far.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gate_junit_schema import validated_junit
from lxml import etree

JUNIT_CHECKED: dict[Path, int] = {}
"""Each gate-junit.xml checked: its path and the modification time (ns) it had when checked."""


@pytest.fixture(autouse=True)
def _every_junit_report_validates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    for path in sorted(tmp_path_factory.getbasetemp().rglob("gate-junit.xml")):
        stamp = path.stat().st_mtime_ns
        if JUNIT_CHECKED.get(path) == stamp:
            continue
        JUNIT_CHECKED[path] = stamp  # reported once, by the test that wrote it
        try:
            validated_junit(path.read_bytes())
        except (etree.XMLSyntaxError, etree.DocumentInvalid) as exc:
            pytest.fail(f"{path}: not a valid JUnit report: {exc}")
