"""What every request passes before the app sees it: the Host it names, the token, and for a POST its Origin.

- **Host** must be ``127.0.0.1:PORT`` or ``localhost:PORT``: a page of another site whose name an attacker points
  at 127.0.0.1 (DNS rebinding) sends its own name, and gets 403 before anything is read.
- **The token**, new and random per start, comes once in the URL the command prints (``?token=``, as Jupyter's);
  the answer sets it as a cookie (HttpOnly, SameSite=Strict, named by the port: cookies do not tell ports apart) and
  redirects to the same page without it, so it leaves the address bar and the history. Without the cookie or the
  token every request is refused (403).
- **A POST** must come from the app's own pages: its ``Origin`` header must be this server's (browsers send it
  with every form POST), and its form must carry the token again (checked by the action, ``app.check_form``).
  SameSite=Strict keeps the cookie off cross-site requests as well.
"""

from __future__ import annotations

import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "omxfs-ui-{port}"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def same(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode(), token.encode())


class Guard:
    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.cookie = COOKIE.format(port=port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get("host") not in self.hosts:
            await _refuse(send, "this server answers to 127.0.0.1 and localhost only")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get("token")
        if given is not None and same(given, self.token) and scope["method"] == "GET":
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            path = scope.get("raw_path") or scope["path"].encode("utf-8")
            await _redirect(send, path + (f"?{rest}".encode("latin-1") if rest else b""), self.cookie, self.token)
            return
        cookies = SimpleCookie()
        cookies.load(headers.get("cookie", ""))
        morsel = cookies.get(self.cookie)
        if not same(morsel.value if morsel else None, self.token):
            await _refuse(send, "open the URL `omxfs ui` printed: it holds the token")
            return
        if scope["method"] not in ("GET", "HEAD") and headers.get("origin") not in self.origins:
            await _refuse(send, "a change must come from this app's own page")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, why: str) -> None:
    body = f"403 Forbidden: {why}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, where: bytes, cookie: str, token: str) -> None:
    value = f"{cookie}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", where),
                (b"set-cookie", value.encode("latin-1")),
                (b"content-length", b"0"),
                (b"referrer-policy", b"no-referrer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
