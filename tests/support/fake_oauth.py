"""A fake authorization / token / device / API server on 127.0.0.1 for the subscription-login tests.

Routes are scripted per test: ``server.route("POST", "/v1/oauth/token", handler)`` where ``handler(request)``
returns ``(status, body)`` (a dict is sent as JSON, a str as text); a route given a list of answers serves
them in turn (the last one repeats). Every request is recorded (``requests``, ``calls(path)``) with its
method, path, query, headers (lower-case), raw body and the body decoded as JSON or a form.

``endpoints(*prefixes)`` is the ``CADDIE_OAUTH_ENDPOINTS`` value that sends those real origins here.
``Browser`` plays the user's browser for loopback logins: given the authorization URL a flow announced, it
calls the flow's ``redirect_uri`` with a code and the flow's ``state``.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

Answer = tuple[int, Any]
Handler = Callable[["OAuthRequest"], Answer]


@dataclass
class OAuthRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    raw: bytes
    body: Any = None
    form: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = OAuthRequest(
            self.command,
            parts.path,
            {k: v[0] for k, v in parse_qs(parts.query).items()},
            {k.lower(): v for k, v in self.headers.items()},
            raw,
        )
        content_type = request.headers.get("content-type", "")
        if raw and "json" in content_type:
            request.body = json.loads(raw)
        elif raw and "form" in content_type:
            request.form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(request)
            route = owner.routes.get((self.command, parts.path))
        if route is None:
            status, body = (
                404,
                {"error": "not_found", "error_description": f"no route for {self.command} {parts.path}"},
            )
        else:
            status, body = route(request)
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "text/plain" if isinstance(body, str) else "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOAuthServer


class FakeOAuthServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[OAuthRequest] = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOAuthServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, method: str, path: str, answer: Handler | Answer | list[Answer]) -> None:
        if isinstance(answer, list):
            queue = list(answer)

            def handler(_request: OAuthRequest) -> Answer:
                return queue.pop(0) if len(queue) > 1 else queue[0]

            self.routes[(method, path)] = handler
        elif isinstance(answer, tuple):
            fixed = answer
            self.routes[(method, path)] = lambda _request: fixed
        else:
            self.routes[(method, path)] = answer

    def calls(self, path: str) -> list[OAuthRequest]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def endpoints(self, *origins: str) -> str:
        """``CADDIE_OAUTH_ENDPOINTS`` sending each origin (``https://platform.claude.com``) here."""
        return json.dumps({origin: self.url for origin in origins})


class Browser:
    """The user's browser: opens the loopback ``redirect_uri`` of an authorization URL with ``code``."""

    def __init__(self, code: str = "the-code", state: str | None = None) -> None:
        self.code = code
        self.state = state
        self.status: int | None = None
        self.page = ""

    def visit(self, auth_url: str, callback: str | None = None) -> None:
        query = {k: v[0] for k, v in parse_qs(urlsplit(auth_url).query).items()}
        target = callback or query.get("redirect_uri") or query["callback_url"]
        params = {"code": self.code}
        state = self.state if self.state is not None else query.get("state")
        if state is not None:
            params["state"] = state
        # The loopback server listens on 127.0.0.1; redirect URIs may say localhost.
        url = target.replace("://localhost:", "://127.0.0.1:") + "?" + urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                self.status, self.page = response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            self.status, self.page = exc.code, exc.read().decode()
