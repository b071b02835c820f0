"""The secret every request to ``omxfs mcp --http`` must carry: ``Authorization: Bearer <token>``.

127.0.0.1 is open to every local process, and a view shares the host's network unless ``--no-network``: without a
secret, a process in alice's view (or another local user) could call bob's server and act as bob, which undoes
the identity the view gives the server. So the server makes a new token at each start (``secrets.token_urlsafe``),
prints it with its URL, and answers 401, and does nothing else, to a request without it. A bearer header is what
the MCP clients people use can be configured to send: Claude Code (``claude mcp add --header``), Codex
(``bearer_token_env_var``) and Cursor (``"headers"``), as the SDK's own client does (an ``httpx2`` client's headers).
"""

from __future__ import annotations

import hmac
import secrets

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SCHEME = "Bearer"
REFUSED = "401 Unauthorized: send the header 'Authorization: Bearer <token>' that omxfs mcp printed when it started\n"


def new_token() -> str:
    """256 random bits, URL-safe: fits a header, a shell variable and a JSON string as it is."""
    return secrets.token_urlsafe(32)


class RequireToken:
    """ASGI middleware in front of the MCP app: an HTTP request reaches it only with the token; the app's own
    start and stop (lifespan) always do."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self.carries_token(scope):
            await self.app(scope, receive, send)
        else:  # an HTTP request (the server is run with websockets off)
            refused = PlainTextResponse(REFUSED, status_code=401, headers={"WWW-Authenticate": SCHEME})
            await refused(scope, receive, send)

    def carries_token(self, scope: Scope) -> bool:
        """Whether the request's Authorization header is ``Bearer <token>`` (the scheme in any case, RFC 9110),
        compared in constant time so that the answer's timing tells nothing of the token."""
        value = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        scheme, _, given = value.partition(b" ")
        return scheme.lower() == SCHEME.lower().encode() and hmac.compare_digest(given.strip(), self.token)
