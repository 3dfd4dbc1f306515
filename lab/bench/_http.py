"""A minimal keep-alive HTTP/1.1 client for the serve benchmark's load generators.

Why not httpx: on a 2-core box the clients share the cores with the
server's workers and PostgreSQL, and httpx spent more CPU per request than
the server did (request building, header models, response decoding): ~320
us a request against a trivial uvicorn app, this client ~25 us. That cost
was measured as the server's. This client does the least a correct
HTTP/1.1 client over loopback must: requests are encoded before the clock
starts, and a response is read as its status line, its Content-Length and
that many body bytes. Nothing is decoded (:meth:`RawClient.send` returns the
raw body); a response without Content-Length is an error, never a guess,
and one that says ``Connection: close`` closes the socket, so the next
request reconnects.
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RawClient", "encode_post"]


def encode_post(host: str, path: str, body: Any) -> bytes:
    """One complete ``POST path`` request with a JSON body, ready to send."""
    data = json.dumps(body, separators=(",", ":")).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n")
    return head.encode("ascii") + data


class RawClient:
    """One keep-alive connection; :meth:`send` returns (status, body) per request."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.host = parts.netloc
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=self.timeout)
        # a request is one small write: never let Nagle hold it back
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock, self._buf = sock, b""
        return sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def send(self, request: bytes) -> tuple[int, bytes]:
        """Send one pre-encoded request, read its whole response: (status, body)."""
        sock = self._sock or self._connect()
        sock.sendall(request)
        buf = self._buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf += self._recv(sock)
        head = buf[:end].split(b"\r\n")
        status = int(head[0].split(b" ", 2)[1])
        length = -1
        close = False
        for line in head[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        if length < 0:  # never from this server; a client must not guess the body's end
            self.close()
            raise ConnectionError(f"a response without Content-Length (status {status})")
        start = end + 4
        while len(buf) < start + length:
            buf += self._recv(sock)
        body = buf[start:start + length]
        self._buf = buf[start + length:]
        if close:
            self.close()
        return status, body

    def _recv(self, sock: socket.socket) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            self.close()
            raise ConnectionError("the server closed the connection mid-response")
        return chunk
