"""The JUnit schema of tests/gate/junit.xsd, and a check of one report against it (lxml)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lxml import etree

SCHEMA_PATH = Path(__file__).with_name("junit.xsd")


@lru_cache(maxsize=1)
def junit_schema() -> etree.XMLSchema:
    """The JUnit schema, parsed once."""
    return etree.XMLSchema(etree.parse(str(SCHEMA_PATH)))


def validated_junit(xml: bytes) -> etree._ElementTree:
    """`xml` parsed (lxml refuses what is not well-formed XML 1.0) and validated against the schema.

    Raises:
        etree.XMLSyntaxError: not well-formed; etree.DocumentInvalid: not the JUnit layout.
    """
    document = etree.ElementTree(etree.fromstring(xml))
    junit_schema().assertValid(document)
    return document
