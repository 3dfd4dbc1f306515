"""The request-body limit: a too-large body is refused with 413 before it is read."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "answer"]


class BodyLimit:
    """Refuse bodies over ``max_bytes``.

    A declared Content-Length over the limit is answered at once, unread; a
    chunked body is counted as it arrives and the read stops at the limit
    (FastAPI passes the HTTPException raised from ``receive`` through).
    Either answer closes the connection: the rest of the body is never read,
    so the connection cannot carry another request.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"the request body is larger than the server's limit of {self.max_bytes:,} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await answer(send, 400, "bad_request", "the Content-Length header is not a number")
                return
            if size > self.max_bytes:
                await answer(send, 413, "body_too_large", self._message())
                return
        received = 0
        over = False

        async def limited() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    raise HTTPException(413, self._message())
            return message

        async def closing(message: Message) -> None:
            if over and message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (b"connection", b"close")]}
            await send(message)

        await self.app(scope, limited, closing)


async def answer(send: Send, status: int, error: str, detail: str) -> None:
    body = json.dumps({"error": error, "detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
