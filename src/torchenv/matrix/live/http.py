"""The one network funnel of ``matrix update``: guarded GETs with timeouts, retries and limits.

Rules every request follows:

1. Only ``https://`` URLs, except ``http://`` to 127.0.0.1/localhost/::1 (local mirrors and
   tests) or when the caller passes ``allow_http``. Redirects are followed by hand, at most
   :data:`MAX_REDIRECTS`, and each target passes the same rule; a redirect from HTTPS to plain
   HTTP is always refused.
2. Connect and read timeouts on every socket operation (``TORCHENV_HTTP_TIMEOUT`` sets the read
   timeout), and one overall deadline per request (``TORCHENV_HTTP_DEADLINE``) that covers its
   redirects, retries, waits, headers and body: a server that trickles a byte now and then
   never trips the read timeout, so when the deadline passes a watchdog shuts the request's
   socket down and the request fails saying so.
3. Bounded retries with exponential backoff on 5xx answers, connection errors, timeouts and
   bodies cut short; 4xx answers are not retried.
4. A response larger than ``max_bytes`` is refused (by Content-Length, or while streaming, so
   a body that never ends costs at most ``max_bytes`` of memory).

``requests`` is imported here only, and only when a :class:`Fetcher` is made.
"""

from __future__ import annotations

import contextlib
import math
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from torchenv import __version__
from torchenv.errors import BadInput, NetworkError

if TYPE_CHECKING:
    import requests

__all__ = [
    "LOCAL_HOSTS",
    "MAX_BACKOFF",
    "MAX_DEADLINE",
    "MAX_REDIRECTS",
    "MAX_RETRIES",
    "MAX_TIMEOUT",
    "FetchPolicy",
    "Fetcher",
    "Response",
    "check_url",
    "parse_timeout",
]

_REDIRECTS = (301, 302, 303, 307, 308)
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_REDIRECTS = 5
MAX_TIMEOUT = 600.0
"""The longest read timeout, in seconds, that ``--timeout`` and ``TORCHENV_HTTP_TIMEOUT`` take."""
MAX_DEADLINE = 3600.0
"""The longest overall deadline of one request, in seconds (``TORCHENV_HTTP_DEADLINE``)."""
MAX_RETRIES = 10
MAX_BACKOFF = 60.0
"""The longest first wait between attempts, in seconds (``TORCHENV_HTTP_BACKOFF``)."""
_CHUNK = 64 * 1024


def _number(raw: str, what: str, *, low: float, high: float, low_open: bool,
            unit: str, example: str) -> float:
    """``raw`` as a finite number within the bounds, else :class:`BadInput` naming it."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    inside = (low < value if low_open else low <= value) and value <= high
    if not (math.isfinite(value) and inside):
        raise BadInput(f"{what}: {raw!r} is not a number of {unit} in {interval}; "
                       f"e.g. {example}")
    return value


def parse_timeout(raw: str, what: str) -> float:
    """A read timeout in seconds, 0 < t ≤ :data:`MAX_TIMEOUT`; :class:`BadInput` names ``what``
    (a flag or variable) and ``raw`` otherwise."""
    return _number(raw, what, low=0, high=MAX_TIMEOUT, low_open=True, unit="seconds",
                   example=f"{what}{' ' if what.startswith('-') else '='}30")


@dataclass(frozen=True)
class FetchPolicy:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    max_bytes: int = 64 * 1024 * 1024
    deadline: float = 300.0
    allow_http: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, allow_http: bool = False) -> FetchPolicy:
        """Defaults, with these variables applied (an empty value counts as unset):

        * ``TORCHENV_HTTP_TIMEOUT``: read timeout in seconds, 0 < t ≤ 600;
        * ``TORCHENV_HTTP_DEADLINE``: overall seconds per request, 0 < t ≤ 3600;
        * ``TORCHENV_HTTP_RETRIES``: extra attempts, a whole number 0–10;
        * ``TORCHENV_HTTP_BACKOFF``: first wait between attempts in seconds, 0 ≤ t ≤ 60
          (doubled after each further failure).

        Raises :class:`BadInput` naming the variable and its value when one is out of range.
        """
        policy = cls(allow_http=allow_http)

        def raw(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None

        timeout = raw("TORCHENV_HTTP_TIMEOUT")
        if timeout is not None:
            policy = policy.with_timeout(parse_timeout(timeout, "TORCHENV_HTTP_TIMEOUT"))
        deadline = raw("TORCHENV_HTTP_DEADLINE")
        if deadline is not None:
            policy = replace(policy, deadline=_number(
                deadline, "TORCHENV_HTTP_DEADLINE", low=0, high=MAX_DEADLINE, low_open=True,
                unit="seconds", example="TORCHENV_HTTP_DEADLINE=120"))
        retries = raw("TORCHENV_HTTP_RETRIES")
        if retries is not None:
            if not (retries.isascii() and retries.isdigit()) or int(retries) > MAX_RETRIES:
                raise BadInput(f"TORCHENV_HTTP_RETRIES: {retries!r} is not a whole number "
                               f"from 0 to {MAX_RETRIES}; e.g. TORCHENV_HTTP_RETRIES=3")
            policy = replace(policy, retries=int(retries))
        backoff = raw("TORCHENV_HTTP_BACKOFF")
        if backoff is not None:
            policy = replace(policy, backoff=_number(
                backoff, "TORCHENV_HTTP_BACKOFF", low=0, high=MAX_BACKOFF, low_open=False,
                unit="seconds", example="TORCHENV_HTTP_BACKOFF=0.5"))
        return policy

    def with_timeout(self, seconds: float) -> FetchPolicy:
        """This policy with ``seconds`` as the read timeout (and no longer a connect timeout)."""
        return replace(self, read_timeout=seconds,
                       connect_timeout=min(type(self).connect_timeout, seconds))


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    content_type: str
    body: bytes


def check_url(url: str, *, allow_http: bool, field: str | None = None) -> None:
    """Raise :class:`BadInput` unless ``url`` is HTTPS, local HTTP, or HTTP with ``allow_http``;
    the error is about ``field`` (``index_base``, ``pypi_base``) when the URL is one the user
    gave, else about a ``URL`` met on the way (a redirect)."""
    lead = "" if field else "URL: "
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018 - a port that is no number raises here, not in the request
    except ValueError as exc:  # "http://[": an IPv6 bracket never closed, a port of letters
        raise BadInput(f"{lead}{url!r} is not a well-formed URL ({exc})", field=field,
                       value=url) from exc
    if parts.scheme == "https" and host:
        return
    if parts.scheme == "http" and host:
        if host in LOCAL_HOSTS or allow_http:
            return
        raise BadInput(f"{lead}refusing plain HTTP {url}",
                       hint="use https://, or pass --allow-http for a trusted mirror",
                       field=field, value=url)
    raise BadInput(f"{lead}{url!r} is not an http(s) URL", field=field, value=url)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _size(n: int) -> str:
    if n >= 1024 * 1024 and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


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


class _Sockets:
    """The sockets one :class:`Fetcher` opened, so a watchdog can cut them.

    Shutting a socket down (rather than closing it) wakes a thread blocked reading it; the
    read then ends as if the server had hung up. The socket is recorded when it connects: a
    response that ends its connection keeps reading from it after the connection lets go.
    """

    def __init__(self) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, sock: Any) -> None:
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.add(sock)

    def cut(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            # the plain socket's shutdown, also under TLS: it only touches the descriptor
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _session(sockets: _Sockets) -> requests.Session:
    """A ``requests`` session whose connections register their sockets with ``sockets``."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3 import connection, connectionpool, poolmanager

    class _HTTPConnection(connection.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            sockets.add(self.sock)

    class _HTTPSConnection(connection.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            sockets.add(self.sock)

    class _HTTPPool(connectionpool.HTTPConnectionPool):
        ConnectionCls = _HTTPConnection

    class _HTTPSPool(connectionpool.HTTPSConnectionPool):
        ConnectionCls = _HTTPSConnection

    pools: dict[str, Any] = {"http": _HTTPPool, "https": _HTTPSPool}

    class _Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **kwargs)
            # an HTTP(S) proxy uses the stock pools, which ours extend; SOCKS has its own
            if manager.pool_classes_by_scheme is poolmanager.pool_classes_by_scheme:
                manager.pool_classes_by_scheme = pools
            return manager

    session = requests.Session()
    for prefix in ("https://", "http://"):
        session.mount(prefix, _Adapter())
    return session


class _Deadline:
    """The end of one request; a watchdog cuts the fetcher's sockets when it passes."""

    def __init__(self, seconds: float, sockets: _Sockets) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self._timer = threading.Timer(seconds, sockets.cut)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return self.end - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.left() <= 0

    def cancel(self) -> None:
        self._timer.cancel()


class Fetcher:
    """GET pages under a :class:`FetchPolicy`; one ``requests`` session for all of them."""

    def __init__(self, policy: FetchPolicy) -> None:
        self.policy = policy
        self._sockets = _Sockets()
        self._session = _session(self._sockets)
        self._session.headers["User-Agent"] = f"torchenv/{__version__} (matrix update)"
        self._sleep = time.sleep
        self.requests_made = 0

    def close(self) -> None:
        self._session.close()

    def get(self, url: str, *, accept: str | None = None, allow_404: bool = False,
            byte_range: str | None = None) -> Response | None:
        """The body at ``url`` after redirects; None for a 404 when ``allow_404``.

        ``byte_range`` (e.g. ``"-65536"`` or ``"100-199"``, as after ``bytes=`` in a Range
        header) asks for part of the body; a server that answers with the whole body instead
        is an error, never a download of it.

        Raises :class:`NetworkError` naming the URL when it cannot be read in time or within
        the size limit, and :class:`BadInput` when the URL (or a redirect target) breaks the
        HTTPS rule.
        """
        check_url(url, allow_http=self.policy.allow_http)
        headers = {"Accept": accept} if accept else {}
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range}"
        deadline = _Deadline(self.policy.deadline, self._sockets)
        try:
            return self._follow(url, headers, deadline, allow_404=allow_404,
                                partial=byte_range is not None)
        finally:
            deadline.cancel()

    def _follow(self, url: str, headers: Mapping[str, str], deadline: _Deadline, *,
                allow_404: bool, partial: bool) -> Response | None:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            status, resp_headers, body = self._get_with_retries(current, headers, deadline,
                                                                partial=partial)
            if status in _REDIRECTS:
                location = resp_headers.get("Location")
                if not location:
                    raise NetworkError(f"{current}: redirect ({status}) without a Location")
                try:
                    target = urljoin(current, location)
                    check_url(target, allow_http=True)
                except (ValueError, BadInput) as exc:
                    raise NetworkError(f"{current}: redirected to {location!r}, which is not "
                                       "a well-formed URL; refused",
                                       hint="the mirror answers wrongly; point --index-base / "
                                       "--pypi-base at another one") from exc
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

    def _too_slow(self, url: str, deadline: _Deadline, received: int) -> NetworkError:
        got = f"; {received} bytes of the body had arrived" if received else ""
        return NetworkError(
            f"{url}: no complete answer within the {deadline.seconds:g} s deadline for one "
            f"request{got}; the server sends too slowly or stalls",
            hint="try again later, point --index-base / --pypi-base at another mirror, or "
            "allow more time with TORCHENV_HTTP_DEADLINE",
        )

    def _get_with_retries(self, url: str, headers: Mapping[str, str], deadline: _Deadline, *,
                          partial: bool) -> tuple[int, Mapping[str, str], bytes | None]:
        """(status, headers, body); the body is None for redirects and 4xx answers."""
        import requests

        policy = self.policy
        attempts = max(1, policy.retries + 1)
        last = ""
        made = 0
        for attempt in range(attempts):
            if attempt:
                wait = policy.backoff * (2 ** (attempt - 1))
                if wait >= deadline.left():
                    last += f"; no time left for another attempt in the {deadline.seconds:g} s " \
                        "deadline"
                    break
                self._sleep(wait)
            left = deadline.left()
            if left <= 0:
                raise self._too_slow(url, deadline, 0)
            self.requests_made += 1
            made += 1
            received = _Received()
            try:
                resp = self._session.get(
                    url, headers=dict(headers), stream=True, allow_redirects=False,
                    timeout=(min(policy.connect_timeout, left), min(policy.read_timeout, left)),
                )
            except requests.exceptions.Timeout as exc:
                if deadline.passed:
                    raise self._too_slow(url, deadline, 0) from exc
                last = f"timed out after {policy.read_timeout:g} s ({_short(exc)})"
                continue
            except requests.exceptions.ConnectionError as exc:
                if deadline.passed:
                    raise self._too_slow(url, deadline, 0) from exc
                last = f"cannot connect: {_connection_reason(exc)}"
                continue
            except requests.exceptions.RequestException as exc:
                if deadline.passed:
                    raise self._too_slow(url, deadline, 0) from exc
                raise NetworkError(f"{url}: {_short(exc)}") from exc
            except ValueError as exc:  # requests reads a redirect's Location even unfollowed
                raise NetworkError(f"{url}: the answer names a URL that is not well-formed "
                                   f"({_short(exc)}); refused",
                                   hint="the mirror answers wrongly; point --index-base / "
                                   "--pypi-base at another one") from exc
            if resp.status_code >= 500:
                last = f"HTTP {resp.status_code}"
                resp.close()
                continue
            if resp.status_code in _REDIRECTS or resp.status_code >= 400:
                resp.close()
                return resp.status_code, resp.headers, None
            if partial and resp.status_code != 206:
                resp.close()
                raise NetworkError(f"{url}: the server ignored the Range header (HTTP "
                                   f"{resp.status_code}); refusing to download the whole file",
                                   hint="use a server that supports range requests")
            # read the body inside the retry loop: a body cut short is worth another try
            try:
                body = self._read_body(url, resp, deadline, received)
            except _Retryable as exc:
                if deadline.passed:
                    raise self._too_slow(url, deadline, received.count) from exc
                last = str(exc)
                continue
            finally:
                resp.close()
            if deadline.passed:  # the watchdog may have cut the last read short
                raise self._too_slow(url, deadline, received.count)
            return resp.status_code, resp.headers, body
        host = urlsplit(url).hostname or url
        raise NetworkError(
            f"{url}: {last} (gave up after {made} attempt{'s' if made > 1 else ''})",
            hint=f"are you offline? check the connection to {host}, or point --index-base / "
            "--pypi-base at a reachable mirror",
        )

    def _read_body(self, url: str, resp: requests.Response, deadline: _Deadline,
                   received: _Received) -> bytes:
        import requests

        limit = self.policy.max_bytes
        length = _content_length(resp.headers.get("Content-Length"))
        if length is not None and length > limit:
            raise NetworkError(f"{url}: the server announces {length} bytes, more than "
                               f"the {_size(limit)} torchenv reads of one response",
                               hint="is --index-base / --pypi-base the right URL?")
        chunks: list[bytes] = []
        try:
            for chunk in resp.iter_content(chunk_size=_CHUNK):
                received.count += len(chunk)
                if received.count > limit:
                    raise NetworkError(f"{url}: the response goes on past the {_size(limit)} "
                                       "torchenv reads of one response; reading stopped",
                                       hint="is --index-base / --pypi-base the right URL?")
                if deadline.passed:
                    raise _Retryable("deadline passed")
                chunks.append(chunk)
        except requests.exceptions.Timeout as exc:
            raise _Retryable(f"timed out reading the body ({_short(exc)})") from exc
        except (requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ConnectionError) as exc:
            raise _Retryable(f"response ended early (truncated): {_short(exc)}") from exc
        body = b"".join(chunks)
        if length is not None and length != len(body) \
                and resp.headers.get("Content-Encoding") in (None, "identity"):
            raise _Retryable(f"response ended early (truncated): got {len(body)} of "
                             f"{length} bytes")
        return body


def _content_length(header: str | None) -> int | None:
    """A ``Content-Length`` header's number, or None when there is none or it is not one: ASCII
    digits, at most 18 of them (more than any response is long), read before ``int`` sees them."""
    if header is None:
        return None
    text = header.strip()
    if not (0 < len(text) <= 18 and text.isascii() and text.isdigit()):
        return None
    return int(text)


@dataclass
class _Received:
    count: int = 0  # body bytes read so far


class _Retryable(Exception):
    pass

