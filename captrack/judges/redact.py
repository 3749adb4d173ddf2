"""Keeping a judge's secrets out of everything captrack writes or prints.

A judge URL may carry a key (``https://user:KEY@host/v1``, ``...?api-key=KEY``, ``.../v1/KEY``). Only the
request itself sees the real URL (its ``user:password`` goes out as Basic auth); judge ids, messages,
verdict files, the cache and the store see `redact_url`'s form or the host and path alone, and any text
that came back from the server goes through `Secrets.scrub` before it is cut or stored. A secret is
masked in every form a server may echo it: as written, URL-decoded, URL-encoded, and base64 of the
value and of ``user:password`` (what Basic auth sends).
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "Secrets", "host_and_path", "looks_like_key", "redact_url"]

MASK = "***"
# Query parameters whose values are credentials (api-key, key, token, access_token, sig, password ...).
_SECRET_PARAM = re.compile(r"key|token|secret|pass|sig|auth|cred|session|code", re.I)
_MIN_SCRUB = 4  # shorter values are not keys, and masking them would mangle ordinary words
_KEY_CHARS = re.compile(r"[A-Za-z0-9_\-.~+/=]+")


def looks_like_key(segment: str) -> bool:
    """Whether a URL path segment looks like a credential: a run of 16+ letters and digits mixing both, high
    in entropy (``sk-proj-Ab12Cd34...``, a 32-digit hex token), unlike a model or deployment name
    (``gpt-4o-mini-2024-07-18``: no run longer than 4)."""
    if not _KEY_CHARS.fullmatch(segment):
        return False
    run = max(re.findall(r"[A-Za-z0-9]+", segment) or [""], key=len)
    if len(run) < 16 or not re.search("[A-Za-z]", run) or sum(ch.isdigit() for ch in run) < 4:
        return False
    counts = Counter(run)
    return -sum(c / len(run) * math.log2(c / len(run)) for c in counts.values()) >= 3.0


def _host(netloc: str) -> str:
    """`netloc` without its ``user:password@`` part."""
    return netloc.rpartition("@")[2]


def _path(path: str, keys: Iterable[str]) -> str:
    """`path` with every segment that is one of `keys` (as written or decoded) or looks like a key masked."""
    secret = {k for k in keys if k}
    return "/".join(MASK if s in secret or unquote(s) in secret or looks_like_key(unquote(s)) else s
                    for s in path.split("/"))


def host_and_path(url: str, keys: Iterable[str] = ()) -> str:
    """``host[:port]/path`` of `url`: no scheme, no credentials, no query, key-like segments masked (the judge id)."""
    parts = urlsplit(url)
    return f"{_host(parts.netloc)}{_path(parts.path, keys)}"


def redact_url(url: str, keys: Iterable[str] = ()) -> str:
    """`url` without credentials: no ``user:password@``, secret query values and key-like path segments masked."""
    parts = urlsplit(url)
    query = [(name, MASK if _SECRET_PARAM.search(name) else value)
             for name, value in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit((parts.scheme, _host(parts.netloc), _path(parts.path, keys), urlencode(query, safe="*"), ""))


def _b64(text: str) -> set[str]:
    """Base64 of `text` (standard and URL-safe, with and without padding)."""
    raw = text.encode("utf-8", "surrogatepass")
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return forms | {f.rstrip("=") for f in forms}


def _forms(value: str) -> set[str]:
    """`value` as written, URL-decoded, URL-encoded and base64-encoded."""
    plain = {value, unquote(value)}
    return plain | {quote(v, safe="") for v in plain} | {quote_plus(v) for v in plain} | {b for v in plain for b in _b64(v)}


@dataclass(frozen=True)
class Secrets:
    """The secret strings of one judge (its key, URL credentials, secret query values, key-like path segments)."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, url: str, *keys: str) -> Secrets:
        """The secrets in `url` (user, password, ``user:password`` as Basic auth sends it, secret query
        values, path segments that are a key or look like one) plus `keys`, in every encoding."""
        parts = urlsplit(url)
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        found = [user, password, *keys]
        found += [value for name, value in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(name)]
        found += [unquote(s) for s in parts.path.split("/") if unquote(s) in keys or looks_like_key(unquote(s))]
        unique = {form for v in found if len(v) >= _MIN_SCRUB for form in _forms(v)}
        if user or password:
            unique |= _b64(f"{user}:{password}")
        unique = {form for form in unique if len(form) >= _MIN_SCRUB}
        return cls(tuple(sorted(unique, key=lambda v: (-len(v), v))))  # longest first: a key that contains another

    def scrub(self, text: str) -> str:
        """`text` with every secret, in every encoding, replaced by ``***`` (scrub before any cut)."""
        for value in self.values:
            text = text.replace(value, MASK)
        return text
