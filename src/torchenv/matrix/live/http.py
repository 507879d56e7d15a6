"""The one network funnel of ``matrix update``: guarded GETs with timeouts, retries and limits.

Rules every request follows:

1. Only ``https://`` URLs, except ``http://`` to 127.0.0.1/localhost/::1 (local mirrors and
   tests) or when the caller passes ``allow_http``. Redirects are followed by hand, at most
   :data:`MAX_REDIRECTS`, and each target passes the same rule; a redirect from HTTPS to plain
   HTTP is always refused.
2. Connect and read timeouts on every request (``TORCHENV_HTTP_TIMEOUT`` overrides the read
   timeout, e.g. for tests).
3. Bounded retries with exponential backoff on 5xx answers, connection errors, timeouts and
   bodies cut short; 4xx answers are not retried.
4. A response larger than ``max_bytes`` is refused (by Content-Length, or while streaming).

``requests`` is imported here only, and only when a :class:`Fetcher` is made.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from torchenv import __version__
from torchenv.errors import BadInput, NetworkError

if TYPE_CHECKING:
    import requests

__all__ = [
    "LOCAL_HOSTS",
    "MAX_REDIRECTS",
    "FetchPolicy",
    "Fetcher",
    "Response",
    "check_url",
]

_REDIRECTS = (301, 302, 303, 307, 308)
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class FetchPolicy:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    max_bytes: int = 64 * 1024 * 1024
    allow_http: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, allow_http: bool = False) -> FetchPolicy:
        """Defaults, with ``TORCHENV_HTTP_TIMEOUT``, ``TORCHENV_HTTP_RETRIES`` and
        ``TORCHENV_HTTP_BACKOFF`` (seconds) applied; a bad value raises :class:`BadInput`."""
        policy = cls(allow_http=allow_http)
        values: dict[str, float] = {}
        for var, key in (("TORCHENV_HTTP_TIMEOUT", "read_timeout"),
                         ("TORCHENV_HTTP_RETRIES", "retries"),
                         ("TORCHENV_HTTP_BACKOFF", "backoff")):
            raw = environ.get(var)
            if raw:
                try:
                    values[key] = float(raw)
                except ValueError as exc:
                    raise BadInput(f"{var}={raw!r} is not a number") from exc
        timeout = values.get("read_timeout", policy.read_timeout)
        return cls(
            connect_timeout=min(policy.connect_timeout, timeout),
            read_timeout=timeout,
            retries=int(values.get("retries", policy.retries)),
            backoff=values.get("backoff", policy.backoff),
            allow_http=allow_http,
        )


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    content_type: str
    body: bytes


def check_url(url: str, *, allow_http: bool, what: str = "URL") -> None:
    """Raise :class:`BadInput` unless ``url`` is HTTPS, local HTTP, or HTTP with ``allow_http``."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return
    if parts.scheme == "http" and host:
        if host in LOCAL_HOSTS or allow_http:
            return
        raise BadInput(f"{what}: refusing plain HTTP {url}",
                       hint="use https://, or pass --allow-http for a trusted mirror")
    raise BadInput(f"{what}: {url!r} is not an http(s) URL")


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _connection_reason(exc: BaseException) -> str:
    """A plain reason for a failed connection (urllib3 nests the useful part deep inside)."""
    text = str(exc)
    for needle, words in (
        ("Connection refused", "connection refused (nothing listens there)"),
        ("Name or service not known", "the host name does not resolve"),
        ("nodename nor servname", "the host name does not resolve"),
        ("Temporary failure in name resolution", "the host name does not resolve (offline?)"),
        ("Network is unreachable", "the network is unreachable (offline?)"),
        ("No route to host", "no route to the host"),
        ("CERTIFICATE_VERIFY_FAILED", "its TLS certificate could not be verified"),
        ("Connection reset", "the connection was reset"),
    ):
        if needle in text:
            return words
    return _short(exc)


class Fetcher:
    """GET pages under a :class:`FetchPolicy`; one ``requests`` session for all of them."""

    def __init__(self, policy: FetchPolicy) -> None:
        import requests

        self.policy = policy
        self._session = requests.Session()
        self._session.headers["User-Agent"] = f"torchenv/{__version__} (matrix update)"
        self._sleep = time.sleep
        self.requests_made = 0

    def close(self) -> None:
        self._session.close()

    def get(self, url: str, *, accept: str | None = None, allow_404: bool = False
            ) -> Response | None:
        """The body at ``url`` after redirects; None for a 404 when ``allow_404``.

        Raises :class:`NetworkError` naming the URL when it cannot be read, and
        :class:`BadInput` when the URL (or a redirect target) breaks the HTTPS rule.
        """
        check_url(url, allow_http=self.policy.allow_http)
        headers = {"Accept": accept} if accept else {}
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            status, resp_headers, body = self._get_with_retries(current, headers)
            if status in _REDIRECTS:
                location = resp_headers.get("Location")
                if not location:
                    raise NetworkError(f"{current}: redirect ({status}) without a Location")
                target = urljoin(current, location)
                if urlsplit(current).scheme == "https" and urlsplit(target).scheme != "https":
                    raise NetworkError(f"{current}: redirected to plain HTTP {target}; refused",
                                       hint="the index must stay on HTTPS")
                try:
                    check_url(target, allow_http=self.policy.allow_http)
                except BadInput as exc:
                    raise NetworkError(f"{current}: redirected to {target}; refused "
                                       "(not HTTPS)", hint=exc.hint) from exc
                current = target
                continue
            if status == 404 and allow_404:
                return None
            if status >= 400 or body is None:
                raise NetworkError(f"{current}: HTTP {status}",
                                   hint="check --index-base / --pypi-base")
            ctype = resp_headers.get("Content-Type", "").split(";")[0].strip().lower()
            return Response(url=current, status=status, content_type=ctype, body=body)
        raise NetworkError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _get_with_retries(self, url: str, headers: Mapping[str, str]
                          ) -> tuple[int, Mapping[str, str], bytes | None]:
        """(status, headers, body); the body is None for redirects and 4xx answers."""
        import requests

        policy = self.policy
        attempts = max(1, policy.retries + 1)
        last = ""
        for attempt in range(attempts):
            if attempt:
                self._sleep(policy.backoff * (2 ** (attempt - 1)))
            self.requests_made += 1
            try:
                resp = self._session.get(
                    url, headers=dict(headers), stream=True, allow_redirects=False,
                    timeout=(policy.connect_timeout, policy.read_timeout),
                )
            except requests.exceptions.Timeout as exc:
                last = f"timed out after {policy.read_timeout:g} s ({_short(exc)})"
                continue
            except requests.exceptions.ConnectionError as exc:
                last = f"cannot connect: {_connection_reason(exc)}"
                continue
            except requests.exceptions.RequestException as exc:
                raise NetworkError(f"{url}: {_short(exc)}") from exc
            if resp.status_code >= 500:
                last = f"HTTP {resp.status_code}"
                resp.close()
                continue
            if resp.status_code in _REDIRECTS or resp.status_code >= 400:
                resp.close()
                return resp.status_code, resp.headers, None
            # read the body inside the retry loop: a body cut short is worth another try
            try:
                body = self._read_body(url, resp)
            except _Retryable as exc:
                last = str(exc)
                continue
            finally:
                resp.close()
            return resp.status_code, resp.headers, body
        host = urlsplit(url).hostname or url
        raise NetworkError(
            f"{url}: {last} (gave up after {attempts} attempts)",
            hint=f"are you offline? check the connection to {host}, or point --index-base / "
            "--pypi-base at a reachable mirror",
        )

    def _read_body(self, url: str, resp: requests.Response) -> bytes:
        import requests

        limit = self.policy.max_bytes
        length = resp.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > limit:
            raise NetworkError(f"{url}: response of {int(length)} bytes exceeds the "
                               f"{limit // (1024 * 1024)} MiB limit")
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in resp.iter_content(chunk_size=256 * 1024):
                size += len(chunk)
                if size > limit:
                    raise NetworkError(f"{url}: response exceeds the "
                                       f"{limit // (1024 * 1024)} MiB limit")
                chunks.append(chunk)
        except requests.exceptions.Timeout as exc:
            raise _Retryable(f"timed out reading the body ({_short(exc)})") from exc
        except (requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ConnectionError) as exc:
            raise _Retryable(f"response ended early (truncated): {_short(exc)}") from exc
        body = b"".join(chunks)
        if length and length.isdigit() and int(length) != len(body):
            raise _Retryable(f"response ended early (truncated): got {len(body)} of "
                             f"{length} bytes")
        return body


class _Retryable(Exception):
    pass
