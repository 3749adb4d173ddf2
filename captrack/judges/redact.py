"""Keeping a judge's secrets out of everything captrack writes or prints.

A judge URL may carry a key (``https://user:KEY@host/v1``, ``...?api-key=KEY``). Only the request
itself sees the real URL; judge ids, messages, verdict files and the cache see `redact_url`'s
form or the host and path alone, and any text that came back from the server goes through
`Secrets.scrub` before it is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "Secrets", "host_and_path", "redact_url"]

MASK = "***"
# Query parameters whose values are credentials (api-key, key, token, access_token, sig, password ...).
_SECRET_PARAM = re.compile(r"key|token|secret|pass|sig|auth|cred|session|code", re.I)
_MIN_SCRUB = 4  # shorter values are not keys, and masking them would mangle ordinary words


def _host(netloc: str) -> str:
    """`netloc` without its ``user:password@`` part."""
    return netloc.rpartition("@")[2]


def host_and_path(url: str) -> str:
    """``host[:port]/path`` of `url`: no scheme, no credentials, no query (the judge id uses this)."""
    parts = urlsplit(url)
    return f"{_host(parts.netloc)}{parts.path}"


def redact_url(url: str) -> str:
    """`url` with its credentials removed and the values of secret-looking query parameters masked."""
    parts = urlsplit(url)
    query = [(name, MASK if _SECRET_PARAM.search(name) else value)
             for name, value in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit((parts.scheme, _host(parts.netloc), parts.path, urlencode(query, safe="*"), ""))


@dataclass(frozen=True)
class Secrets:
    """The secret strings of one judge (its key, URL credentials, secret query values)."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, url: str, *keys: str) -> Secrets:
        """The secrets in `url` (user, password, secret query values) plus `keys`."""
        parts = urlsplit(url)
        found = [parts.username or "", parts.password or "", *keys]
        found += [value for name, value in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(name)]
        unique = {form for v in found for form in (v, unquote(v)) if len(form) >= _MIN_SCRUB}  # as written and decoded
        return cls(tuple(sorted(unique, key=len, reverse=True)))  # longest first: a key that contains another

    def scrub(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        for value in self.values:
            text = text.replace(value, MASK)
        return text
