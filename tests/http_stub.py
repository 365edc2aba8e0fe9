"""Test support: the JSON-over-HTTP plumbing shared by the stub servers (chat, embeddings, Voyage)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet request handler that reads a JSON body and answers with JSON."""

    def log_message(self, *args: object) -> None:
        """Keep test output quiet."""

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def reply_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
