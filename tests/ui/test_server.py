"""``omxfs ui`` as a real server process, asked over plain HTTP: what it refuses (no token, another Host, another
Origin, no form token, a non-supervisor's action), the event stream of a mounted workspace, and a stream opened
with a page's cursor or a reconnect's Last-Event-ID sending first what the page missed."""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from omxfs.checkpoints.review import Review
from omxfs.store import Workspace
from tests.fuse.conftest import Mount, poll
from tests.ui.conftest import Server, start_ui


def ask(
    server: Server,
    method: str,
    path: str,
    *,
    host: str | None = None,
    cookie: bool = True,
    headers: dict[str, str] | None = None,
    body: str | None = None,
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    sent = {"Host": host or f"127.0.0.1:{server.port}", **(headers or {})}
    if cookie:
        sent["Cookie"] = f"omxfs-ui-{server.port}={server.token}"
    if body is not None:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    connection.request(method, path, body=body, headers=sent)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer


def signed_in(server: Server) -> dict[str, str]:
    return {"Host": f"127.0.0.1:{server.port}", "Cookie": f"omxfs-ui-{server.port}={server.token}"}


@pytest.fixture
def served(ws: Workspace) -> Iterator[tuple[Workspace, Server]]:
    ws.collab.write("alice", "notes.md", b"one\n", expected_version=0)
    ws.collab.write("bob", "notes.md", b"two\n", expected_version=1)
    server = start_ui(ws.root, "--as", "boss")
    yield ws, server
    server.stop()


def test_nothing_is_served_without_the_token_or_for_another_host(served: tuple[Workspace, Server]) -> None:
    _, server = served
    assert ask(server, "GET", "/team", cookie=False).status == 403
    assert ask(server, "GET", "/events", cookie=False).status == 403
    assert ask(server, "GET", "/team?token=not-it", cookie=False).status == 403
    first = ask(server, "GET", f"/collab?token={server.token}", cookie=False)
    assert first.status == 303 and first.getheader("location") == "/collab"  # the token leaves the address bar
    assert f"omxfs-ui-{server.port}={server.token}" in (first.getheader("set-cookie") or "")
    assert "SameSite=Strict" in (first.getheader("set-cookie") or "")
    assert ask(server, "GET", "/team").status == 200
    assert ask(server, "GET", "/team", host=f"localhost:{server.port}").status == 200
    # DNS rebinding: a page of evil.example whose name resolves to 127.0.0.1 sends its own Host
    assert ask(server, "GET", "/team", host=f"evil.example:{server.port}").status == 403
    assert ask(server, "GET", "/team", host="127.0.0.1:1").status == 403


def test_a_change_must_come_from_the_apps_own_page(served: tuple[Workspace, Server]) -> None:
    ws, server = served
    origin = f"http://127.0.0.1:{server.port}"
    form = urlencode({"token": server.token, "path": "notes.md", "version": "1", "expected": "2"})
    no_token = urlencode({"path": "notes.md", "version": "1", "expected": "2"})
    evil = {"Origin": "http://evil.example"}
    assert ask(server, "POST", "/collab/rollback", body=form, headers=evil).status == 403
    assert ask(server, "POST", "/collab/rollback", body=form).status == 403  # no Origin at all
    assert ask(server, "POST", "/collab/rollback", body=no_token, headers={"Origin": origin}).status == 403
    assert ask(server, "POST", "/collab/rollback", body=form, headers={"Origin": origin}, cookie=False).status == 403
    assert ws.collab.current_version("notes.md") == 2
    done = ask(server, "POST", "/collab/rollback", body=form, headers={"Origin": origin})
    assert done.status == 303
    assert ws.collab.read("notes.md").content == b"one\n"  # the same request from the page itself acts


def test_accept_and_discard_are_refused_from_elsewhere_and_to_a_non_supervisor(ws: Workspace) -> None:
    review = Review(ws, "alice")
    review.prepare()  # what a review run leaves: its layers, with a change in the upper one
    (review.upper / "held.md").write_text("held\n")
    boss, alice = start_ui(ws.root, "--as", "boss"), start_ui(ws.root, "--as", "alice")
    try:
        for server in (boss, alice):
            origin = {"Origin": f"http://127.0.0.1:{server.port}"}
            form, no_token = urlencode({"token": server.token}), urlencode({"token": "guess"})
            for action in ("accept", "discard"):
                path = f"/checkpoints/alice/{action}"
                assert ask(server, "POST", path, body=form, headers={"Origin": "http://evil.example"}).status == 403
                assert ask(server, "POST", path, body=form).status == 403  # no Origin at all
                assert ask(server, "POST", path, body=no_token, headers=origin).status == 403
        alice_form = urlencode({"token": alice.token})
        assert (
            ask(
                alice,
                "POST",
                "/checkpoints/alice/accept",
                body=alice_form,
                headers={"Origin": f"http://127.0.0.1:{alice.port}"},
            ).status
            == 403
        )
        assert review.pending and not (ws.root / "agents/alice/held.md").exists()
        # nothing pending for bob: the store's refusal, one line on bob's page (409), never a traceback
        refused = ask_text(boss, "/checkpoints/bob/discard", urlencode({"token": boss.token}))
        assert refused[0] == 409 and '<p class="error" id="refused">bob has no review pending' in refused[1]
        done = ask(
            boss,
            "POST",
            "/checkpoints/alice/accept",
            body=urlencode({"token": boss.token}),
            headers={"Origin": f"http://127.0.0.1:{boss.port}"},
        )
        assert done.status == 303
        assert (ws.root / "agents/alice/held.md").read_text() == "held\n" and not review.pending
    finally:
        boss.stop()
        alice.stop()


def ask_text(server: Server, path: str, body: str) -> tuple[int, str]:
    """A POST from the app's own page, with the page it answers."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {
        **signed_in(server),
        "Origin": f"http://127.0.0.1:{server.port}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    connection.request("POST", path, body=body, headers=headers)
    answer = connection.getresponse()
    text = answer.read().decode()
    connection.close()
    return answer.status, text


def test_a_non_supervisor_sees_the_pages_read_only(ws: Workspace) -> None:
    ws.collab.write("alice", "notes.md", b"one\n", expected_version=0)
    ws.collab.write("bob", "notes.md", b"two\n", expected_version=1)
    server = start_ui(ws.root, "--as", "alice")
    try:
        origin = f"http://127.0.0.1:{server.port}"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/team", headers=signed_in(server))
        page = connection.getresponse().read().decode()
        connection.close()
        assert "read-only as alice" in page
        form = urlencode({"token": server.token, "path": "notes.md", "version": "1", "expected": "2"})
        assert ask(server, "POST", "/collab/rollback", body=form, headers={"Origin": origin}).status == 403
        assert ws.collab.current_version("notes.md") == 2
    finally:
        server.stop()


def test_a_write_through_a_mount_reaches_the_open_event_stream(mount: Callable[..., Mount]) -> None:
    m = mount(agents=("alice", "bob"), supervisors=("boss",), in_place=True)
    server = start_ui(m.root)  # the mountpoint: the store beneath it is read
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/events", headers=signed_in(server))
        stream = connection.getresponse()
        assert stream.status == 200
        assert [e.kind for e in _until_ready(stream)] == ["ready"]  # no cursor: nothing replayed
        m.run("printf 'hello\\n' > collaborative/current/from-mount.md", agent="bob", check=True)
        written = time.monotonic()
        seen = b""
        while b"from-mount.md" not in seen:
            line = stream.readline()
            assert line, "the stream ended"
            if line.startswith(b"data:"):
                seen += line
        print(f"write → event line: {time.monotonic() - written:.3f} s")
        assert b"committed from-mount.md version 1" in seen and b"<td>bob</td>" in seen
        connection.close()
    finally:
        server.stop()


def test_the_pages_name_a_workspace_mounted_in_place_as_the_person_did(mount: Callable[..., Mount]) -> None:
    m = mount(agents=("alice", "bob"), supervisors=("boss",), in_place=True)
    server = start_ui(Path(m.root.name), cwd=m.root.parent)  # `omxfs ui ws`: its store is reached by a descriptor
    try:
        for page in ("/team", "/needs", "/collab/file?path=no-such-file.md"):  # a page, and a failed one
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            connection.request("GET", page, headers=signed_in(server))
            html = connection.getresponse().read().decode()
            connection.close()
            assert "/proc/self/fd" not in html, page
            header = re.search(r'<span class="ws">(.*?)</span>', html)
            assert header is not None and header.group(1) == "ws", page
    finally:
        server.stop()


@dataclass(frozen=True)
class Mark:
    """A cursor or an event's id: the server's epoch and the event's number (``EPOCH-N``)."""

    epoch: str
    number: int

    @classmethod
    def parse(cls, text: str) -> Mark:
        epoch, _, number = text.rpartition("-")
        return cls(epoch, int(number))

    def __add__(self, later: int) -> Mark:
        return Mark(self.epoch, self.number + later)

    def __str__(self) -> str:
        return f"{self.epoch}-{self.number}"


@dataclass(frozen=True)
class Sent:
    """One server-sent event as it came over the wire."""

    kind: str
    id: Mark | None  # ready has none
    data: str


def _next_event(stream: http.client.HTTPResponse) -> Sent:
    fields: dict[str, list[str]] = {}
    while True:
        line = stream.readline()
        assert line, "the stream ended"
        text = line.decode().rstrip("\r\n")
        if not text and fields:
            numbered = Mark.parse(fields["id"][0]) if "id" in fields else None
            return Sent(fields["event"][0], numbered, "\n".join(fields.get("data", [])))
        if text and not text.startswith(":"):  # ":" opens a comment (the keep-alive ping)
            name, _, value = text.partition(": ")
            fields.setdefault(name, []).append(value)


def _until_ready(stream: http.client.HTTPResponse) -> list[Sent]:
    """The events up to ``ready`` (the replay, then ready itself), each numbered after the one before."""
    sent = [_next_event(stream)]
    while sent[-1].kind != "ready":
        sent.append(_next_event(stream))
    numbered = [e.id.number if e.id else 0 for e in sent if e.kind == "feed"]
    assert numbered == sorted(set(numbered)), "an event sent twice or out of order"
    return sent


def _open_stream(
    server: Server, path: str, headers: dict[str, str] | None = None
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", path, headers={**signed_in(server), **(headers or {})})
    stream = connection.getresponse()
    assert stream.status == 200
    return connection, stream


def _activity(server: Server) -> tuple[str, Mark]:
    """The Activity page as rendered now, and its cursor (the number of the newest event it was rendered with)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/activity", headers=signed_in(server))
    page = connection.getresponse().read().decode()
    connection.close()
    found = re.search(r'data-cursor="([0-9a-f]+-\d+)"', page)
    assert found, "the page carries no cursor"
    return page, Mark.parse(found.group(1))


def _committed(ws: Workspace, server: Server, agent: str, name: str) -> None:
    """``agent`` commits ``name`` (its first version); returns once the feed has it (a page rendered now shows it)."""
    ws.collab.write(agent, name, b"x\n", expected_version=0)
    said = f"committed {name} version 1"
    poll(lambda: said in _activity(server)[0], what=f"the feed to find {said!r}")


def _replayed(server: Server, path: str) -> list[Sent]:
    """What a stream opened at ``path`` sends before it is live (what it replays, and ready); then closed."""
    connection, stream = _open_stream(server, path)
    try:
        return _until_ready(stream)
    finally:
        connection.close()


def test_a_page_of_another_server_is_told_to_load_itself_again(served: tuple[Workspace, Server]) -> None:
    """``omxfs ui`` started again numbers the store's events anew (those of files removed meanwhile gone): a page
    of the first server, left open, must not take the second's numbers for its own and miss what came since."""
    ws, first = served
    _, cursor = _activity(first)
    _committed(ws, first, "alice", "seen.md")
    got = _replayed(first, f"/events?after={cursor}")
    last = got[1].id
    assert last is not None and last.epoch == cursor.epoch
    second = start_ui(ws.root)
    try:
        _committed(ws, second, "bob", "after-the-restart.md")
        _, own = _activity(second)
        assert own.epoch != cursor.epoch
        for path, headers in (
            (f"/events?after={cursor}", {}),  # the page's cursor
            (f"/events?after={cursor}", {"Last-Event-ID": str(last)}),  # its stream's reconnect
            (f"/events?after={cursor.number}", {}),  # a page of an omxfs ui before epochs
        ):
            connection, stream = _open_stream(second, path, headers)
            try:
                assert [e.kind for e in _until_ready(stream)] == ["reload", "ready"], (path, headers)
            finally:
                connection.close()
        assert [e.kind for e in _replayed(second, f"/events?after={own}")] == ["ready"]  # its own page: as ever
    finally:
        second.stop()


def test_an_event_found_between_a_page_and_its_stream_is_sent_by_the_stream(
    served: tuple[Workspace, Server],
) -> None:
    """The race a page had: rendered, then the feed finds an event, then the page's stream opens. The stream
    opens only once the feed has the event, so no queue of the page's was there to take it: only the page's
    cursor brings it."""
    ws, server = served
    page, cursor = _activity(server)
    assert "committed between.md" not in page
    _committed(ws, server, "alice", "between.md")

    replayed = _replayed(server, f"/events?after={cursor}")
    rows = [e for e in replayed if e.kind == "feed"]
    assert len(rows) == 1 and "committed between.md version 1" in rows[0].data
    assert rows[0].id == cursor + 1
    assert [e.kind for e in replayed] == ["feed", "tick", "ready"]  # the tick reloads a page that shows a state
    assert replayed[1].id == rows[0].id  # what a reconnect resumes after


def test_a_reconnecting_stream_resumes_after_its_last_event_id(served: tuple[Workspace, Server]) -> None:
    """A browser's EventSource reconnects with the id of the last event it got (Last-Event-ID), the URL still
    holding the page's first cursor: what it got is not sent again, what it missed is."""
    ws, server = served
    _, cursor = _activity(server)
    _committed(ws, server, "alice", "first.md")
    got = _replayed(server, f"/events?after={cursor}")
    assert [e.kind for e in got] == ["feed", "tick", "ready"] and "committed first.md" in got[0].data
    last = got[1].id
    assert last is not None

    _committed(ws, server, "bob", "missed.md")  # while no stream is open
    connection, stream = _open_stream(server, f"/events?after={cursor}", {"Last-Event-ID": str(last)})
    try:
        resumed = _until_ready(stream)
        assert [e.kind for e in resumed] == ["feed", "tick", "ready"]
        assert "committed missed.md version 1" in resumed[0].data and resumed[0].id == last + 1

        ws.collab.write("bob", "live.md", b"z\n", expected_version=0)  # and the stream goes on live
        live = _next_event(stream)
        assert live.kind == "feed" and "committed live.md version 1" in live.data and live.id == last + 2
    finally:
        connection.close()


def test_accepting_a_nested_branch_says_it_went_into_its_parent_not_the_zone(served: tuple[Workspace, Server]) -> None:
    ws, server = served
    parent, child = Review(ws, "alice", "p"), Review(ws, "alice", "c")
    parent.prepare()
    (parent.upper / "p.md").write_text("p\n")
    child.prepare("p")
    (child.upper / "c.md").write_text("c\n")
    answer = ask(server, "POST", "/checkpoints/alice/accept", body=urlencode({"token": server.token, "branch": "c"}),
                 headers={"Origin": f"http://127.0.0.1:{server.port}"})  # fmt: skip
    assert answer.status == 303
    done = parse_qs(urlsplit(answer.getheader("Location") or "").query)["done"][0]
    assert done == "accepted alice's branch c into branch p: the zone is unchanged until it is", done
    assert (parent.upper / "c.md").read_text() == "c\n" and not (ws.root / "agents/alice/c.md").exists()
