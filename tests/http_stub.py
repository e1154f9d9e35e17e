"""Loopback HTTP stand-ins for an engine's server (OpenAI-compatible routes, a /metrics page): the handler
base the stand-ins share and a context that serves one on 127.0.0.1 for the length of a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubHandler(BaseHTTPRequestHandler):
    """Quiet (no request log on stderr) and with one way to answer 200 with a body."""

    def send_body(self, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a free loopback port; yields the base URL, stops the server after the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A short poll: shutdown() waits for the serving loop to look again.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
