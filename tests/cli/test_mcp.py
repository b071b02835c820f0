"""``omxfs mcp WS --as NAME`` (issue 17): the workspace tools served over MCP, driven by the official SDK's own
``Client`` as a real client: it starts ``omxfs mcp`` over stdio (or reaches ``--http`` on 127.0.0.1) against a
real mount, and every call goes through the server process, the mount and the store.

The mount's default identity is alice, so a server ``--as bob`` whose writes land in bob's zone shows that the
server acts as NAME on the mount, not as whoever started it.
"""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import LATEST_PROTOCOL_VERSION

from agent.workspace_tools import get_tool_definitions
from agent.workspace_tools.mcp_token import REFUSED, RequireToken
from cli.mcp import SERVER_MODULE, server_command
from cli.omxfs import main as omxfs
from omxfs.store import Workspace
from tests.fuse.conftest import DEADLINE, Mount, clean_env, mount, poll  # noqa: F401
from tests.support.scripts import with_ctrl_c

MountFactory = Callable[..., Mount]
Clients = dict[str, Client]


def _params(root: Path, agent: str, *extra: str) -> StdioServerParameters:
    # the test process has no OMX_AGENT: the server must get its identity from `omxfs mcp`, not from us
    argv = ["-m", "cli.omxfs", "mcp", str(root), "--as", agent, *extra]
    return StdioServerParameters(command=sys.executable, args=argv, env=clean_env())


@asynccontextmanager
async def _clients(root: Path, agents: list[str]) -> AsyncIterator[Clients]:
    async with AsyncExitStack() as stack:
        yield {agent: await stack.enter_async_context(Client(_params(root, agent))) for agent in agents}


def session(root: Path, agents: list[str], body: Callable[[Clients], Awaitable[None]]) -> None:
    """Run ``body`` with one connected MCP client per agent, each talking to its own ``omxfs mcp ROOT`` process
    (ROOT: a mount, or a store directory no daemon serves)."""

    async def run() -> None:
        with anyio.fail_after(60):
            async with _clients(root, agents) as clients:
                await body(clients)

    anyio.run(run)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``{"success": ...}`` result; the text a model reads and the structured content agree."""
    answer = await client.call_tool(name, arguments)
    result = answer.structured_content
    assert isinstance(result, dict) and isinstance(result["success"], bool), answer
    assert [json.loads(block.text) for block in answer.content if block.type == "text"] == [result]
    assert answer.is_error is not result["success"]  # a failed call is a tool error the client shows as one
    return result


async def ok(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await call(client, name, arguments)
    assert result["success"] is True, result
    return result


def test_tools_listed_are_the_generated_definitions(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])

    async def body(clients: Clients) -> None:
        listed = (await clients["bob"].list_tools()).tools
        expected = get_tool_definitions(history=True)  # with the tools on bob's own checkpoints (issue 27)
        assert [t.name for t in listed] == [d["name"] for d in expected]
        assert [t.input_schema for t in listed] == [d["parameters"] for d in expected]
        assert [t.description for t in listed] == [d["description"] for d in expected]
        instructions = clients["bob"].instructions or ""
        assert instructions.startswith("You are bob") and "alice" in instructions  # the zones, for bob's team

    session(m.root, ["bob"], body)


def test_save_lands_in_the_private_zone_of_the_server_agent_and_mistakes_are_results(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"], default="alice")

    async def body(clients: Clients) -> None:
        saved = await ok(clients["bob"], "save_to_my_workspace", {"filename": "notes/plan.md", "content": "步骤一"})
        assert saved["path"] == "agents/bob/notes/plan.md" and saved["agent_id"] == "bob"
        listed = await ok(clients["bob"], "list_workspace_files", {})
        assert listed["files"] == ["notes/plan.md"]
        bad = await call(clients["bob"], "save_to_my_workspace", {"filename": "../alice/x.md", "content": "no"})
        assert bad["success"] is False and bad["error"] and bad["hint"]
        # a model's mistakes come back as the dispatcher's results, with what to do, not as protocol errors
        missing = await call(clients["bob"], "save_to_my_workspace", {"filename": "x.md"})
        assert missing["error_type"] == "invalid_arguments" and '"content" (string, required)' in missing["hint"]
        unknown = await call(clients["bob"], "save_file", {})
        assert unknown["error_type"] == "unknown_tool"
        assert unknown["available_tools"] == [d["name"] for d in get_tool_definitions(history=True)]

    session(m.root, ["bob"], body)
    assert m.path("agents/bob/notes/plan.md").read_text("utf-8") == "步骤一"
    assert m.ws.private.read("bob", "notes/plan.md") == "步骤一".encode()  # the store agrees
    assert not m.path("agents/alice/x.md").exists()


def test_handoff_from_one_server_to_another(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])

    async def body(clients: Clients) -> None:
        delivery = {"to_agent": "bob", "filename": "data.csv", "content": "a,b\n1,2\n", "message": "please chart"}
        sent = await ok(clients["alice"], "handoff_file", delivery)
        assert sent["path"] == "handoff/alice_to_bob/data.csv"
        inbox = await ok(clients["bob"], "check_my_handoffs", {})
        assert [(h["from"], h["filename"], h["message"]) for h in inbox["handoffs"]] == [
            ("alice", "data.csv", "please chart")
        ]
        read = await ok(clients["bob"], "read_handoff", {"from_agent": "alice", "filename": "data.csv"})
        assert read["content"] == "a,b\n1,2\n"
        assert (await ok(clients["alice"], "check_my_handoffs", {}))["count"] == 0

    session(m.root, ["alice", "bob"], body)


def test_collaborative_conflict_carries_the_suggestion_and_recovers(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    first = {"filepath": "report.md", "content": "intro\n", "message": "draft", "expected_version": 0}

    async def body(clients: Clients) -> None:
        alice, bob = clients["alice"], clients["bob"]
        assert (await ok(alice, "collab_write", first))["version"] == 1
        polish = {"filepath": "report.md", "content": "Intro.\n", "message": "polish", "expected_version": 1}
        assert (await ok(bob, "collab_write", polish))["version"] == 2
        stale = {"filepath": "report.md", "content": "intro\nresults\n", "message": "results", "expected_version": 1}
        conflict = await call(alice, "collab_write", stale)
        assert conflict["success"] is False and conflict["is_conflict"] is True
        info = conflict["conflict"]
        assert (info["current_version"], info["current_author"]) == (2, "bob")
        assert (info["current_content"], info["your_content"]) == ("Intro.\n", "intro\nresults\n")
        # "your rejected content is kept (see kept_at)": by the mount, on disk, not only in this reply
        assert (m.disk / info["kept_at"]).read_text("utf-8") == "intro\nresults\n"
        assert (
            json.loads((m.disk / f"{info['kept_at']}.json").read_text("utf-8"))["your_content"] == info["your_content"]
        )
        assert "expected_version=2" in conflict["suggestion"]
        # the recovery the suggestion asks for: merge into the current version and write on it
        merged = {
            "filepath": "report.md",
            "content": info["current_content"] + "results\n",
            "message": "results, merged with bob's polish",
            "expected_version": info["current_version"],
        }
        assert (await ok(alice, "collab_write", merged))["version"] == 3
        history = await ok(bob, "collab_history", {"filepath": "report.md"})
        assert [(h["version"], h["author"]) for h in history["history"]] == [(1, "alice"), (2, "bob"), (3, "alice")]

    session(m.root, ["alice", "bob"], body)
    assert m.ws.collab.read("report.md").content == b"Intro.\nresults\n"


def test_realtime_edits_from_two_servers_merge(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    doc = {"doc_id": "board"}

    async def body(clients: Clients) -> None:
        alice, bob = clients["alice"], clients["bob"]
        schema = {"title": "rga", "tasks": "or_set", "done": "pn_counter"}
        await ok(alice, "realtime_create_document", {**doc, "schema": schema})
        await ok(
            alice,
            "realtime_edit_text",
            {**doc, "field_name": "title", "operation": "insert", "args": {"position": 0, "text": "Sprint"}},
        )
        edit = {"position": 6, "text": " 1"}
        assert (
            await ok(bob, "realtime_edit_text", {**doc, "field_name": "title", "operation": "insert", "args": edit})
        )["text"] == "Sprint 1"
        async with anyio.create_task_group() as tg:  # both at once
            for agent, client in clients.items():
                tg.start_soon(
                    ok, client, "realtime_set_add", {**doc, "field_name": "tasks", "element": f"{agent}'s task"}
                )
                tg.start_soon(ok, client, "realtime_counter_increment", {**doc, "field_name": "done"})
        snapshot = (await ok(bob, "realtime_get_document_snapshot", doc))["snapshot"]
        assert snapshot["fields"] == {"title": "Sprint 1", "tasks": ["alice's task", "bob's task"], "done": 2}

    session(m.root, ["alice", "bob"], body)


@contextmanager
def http_server(m: Mount, agent: str) -> Iterator[tuple[str, str]]:
    """``omxfs mcp --http 0`` for ``agent``: its URL and the token it printed, from the line it prints once it
    serves; the server is stopped after."""
    argv = [sys.executable, "-m", "cli.omxfs", "mcp", str(m.root), "--as", agent, "--http", "0"]
    with subprocess.Popen(argv, env=clean_env(), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as server:
        try:
            line = _line(server.stderr)
            found = re.fullmatch(r'serving MCP for omx at (http://127\.0\.0\.1:\d+/mcp) \(every request needs the '
                                 r'header "Authorization: Bearer ([\w-]{43})"\)\n', line)  # fmt: skip
            assert found, line
            yield found.group(1), found.group(2)
        finally:
            server.terminate()
            server.wait(DEADLINE)


class HttpClient:
    """The SDK's client over streamable HTTP through an ``httpx2`` client whose headers (the token, as Claude Code's
    --header sends it) can change between calls, and which keeps the HTTP status of every response."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.statuses: list[int] = []

        async def keep(response: httpx2.Response) -> None:
            self.statuses.append(response.status_code)

        self.http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [keep]})
        self.url = url

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Client]:
        async with self.http, Client(streamable_http_client(self.url, http_client=self.http)) as client:
            yield client  # the transport leaves a client it is given open: closed here


def test_streamable_http_on_localhost_with_the_token(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    with http_server(m, "bob") as (url, token):

        async def run() -> None:
            with anyio.fail_after(60):
                async with HttpClient(url, {"Authorization": f"Bearer {token}"}).session() as client:
                    assert len((await client.list_tools()).tools) == len(get_tool_definitions(history=True))
                    await ok(client, "save_to_my_workspace", {"filename": "over-http.md", "content": "hi"})

        anyio.run(run)
    assert m.path("agents/bob/over-http.md").read_text("utf-8") == "hi"


def test_without_the_token_or_with_a_wrong_one_a_request_gets_401_and_no_tool_runs(mount: MountFactory) -> None:
    """Any local process can reach 127.0.0.1, a process in alice's view too: without the token bob's server printed
    it must not act as bob (issue 14's identity). The SDK's client cannot connect without it, and a client that did
    connect has each call answered 401, and not run, once its header is gone or wrong (the protocol's requests are
    self-contained POSTs: a call needs no session, only the token)."""
    m = mount(agents=["alice", "bob"])
    refusals = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer"}, {"X-Token": "x"}]
    with http_server(m, "bob") as (url, token):
        right = {"Authorization": f"Bearer {token}"}

        async def connect(headers: dict[str, str]) -> HttpClient:
            client = HttpClient(url, headers)
            refused = pytest.RaisesExc(MCPError, match="Server returned an error response")
            with pytest.RaisesGroup(refused, flatten_subgroups=True):  # raised from the transport's task group
                async with client.session():
                    pass
            return client

        async def call_as(http: HttpClient, client: Client, headers: dict[str, str], filename: str) -> None:
            http.http.headers.pop("Authorization", None)
            http.http.headers.update(headers)
            http.statuses.clear()
            await client.call_tool("save_to_my_workspace", {"filename": filename, "content": "as bob"})

        async def run() -> None:
            with anyio.fail_after(60):
                for headers in [*refusals, {"Authorization": token}, {"Authorization": f"Bearer {token}x"}]:
                    refused = await connect(headers)
                    assert refused.statuses and set(refused.statuses) == {401}, (headers, refused.statuses)
                http = HttpClient(url, right)
                async with http.session() as client:
                    for i, headers in enumerate(refusals):
                        with pytest.raises(MCPError, match="Server returned an error response"):
                            await call_as(http, client, headers, f"stolen-{i}.md")
                        assert http.statuses == [401], (headers, http.statuses)
                    await call_as(http, client, {"Authorization": f"bearer {token}"}, "mine.md")  # any case
                    assert set(http.statuses) == {200}, http.statuses

        anyio.run(run)
    assert sorted(p.name for p in m.path("agents/bob").iterdir()) == ["mine.md"]


def test_the_refusal_says_which_header_to_send() -> None:
    """A 401 tells a user who forgot the header what to send (and nothing else: no tool, no server detail)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the request reached the server")

    async def run() -> None:
        transport = httpx2.ASGITransport(app=RequireToken(app, "s3cret"))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.post("/mcp", json={}, headers={"Authorization": "Bearer s3cre"})
        assert (answer.status_code, answer.headers["www-authenticate"], answer.text) == (401, "Bearer", REFUSED)

    anyio.run(run)


WAIT_S = 60.0  # for a server in a view to start or stop on a loaded machine: a failure, never a hang


def _line(stream: IO[str] | None) -> str:
    """The next line ``stream`` holds, or a failure after WAIT_S seconds instead of a hang."""
    assert stream is not None
    ready, _, _ = select.select([stream], [], [], WAIT_S)
    assert ready, f"nothing to read in {WAIT_S}s"
    return stream.readline()


def _rest(stream: IO[str] | None) -> str:
    """What ``stream`` holds up to its end, within WAIT_S seconds."""
    assert stream is not None
    text, deadline = "", time.monotonic() + WAIT_S
    while select.select([stream], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return text
        text += chunk.decode(errors="replace")
    raise AssertionError(f"the stream stayed open {WAIT_S}s after the process ended: {text!r}")


def _interrupted(argv: list[str], ready: Callable[[subprocess.Popen[str]], None]) -> tuple[int, str]:
    """Start ``argv``, wait for ``ready``, press Ctrl-C (SIGINT to ``omxfs mcp``, which its view forwards to the
    server) and return its exit status and what it said on stderr after that."""
    with subprocess.Popen(
        with_ctrl_c(argv),
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        try:
            ready(server)
            server.send_signal(signal.SIGINT)
            status = server.wait(WAIT_S)  # TimeoutExpired here is the hang this checks for
            return status, _rest(server.stderr)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(DEADLINE)


def test_ctrl_c_stops_the_server_without_a_traceback_over_http_and_stdio(mount: MountFactory) -> None:
    """A user who runs ``omxfs mcp`` by hand stops it with Ctrl-C: status 130, no KeyboardInterrupt traceback; over
    stdio at once, not after the next line the SDK's stdin thread would have waited for."""
    m = mount(agents=["alice", "bob"])
    command = [sys.executable, "-m", "cli.omxfs", "mcp", str(m.root), "--as", "bob"]

    def bound(server: subprocess.Popen[str]) -> None:
        assert "http://127.0.0.1:" in _line(server.stderr)

    def initialized(server: subprocess.Popen[str]) -> None:  # the stdio server answers, so it is serving
        assert server.stdin is not None and server.stdout is not None
        client = {"name": "test", "version": "0"}
        hello = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        assert json.loads(_line(server.stdout))["id"] == 1

    for argv, ready in (([*command, "--http", "0"], bound), (command, initialized)):
        status, said = _interrupted(argv, ready)
        assert (status, said) == (130, ""), said


def test_the_help_and_the_docs_say_how_to_add_the_server_to_claude_code_codex_and_cursor() -> None:
    """Over stdio, and over HTTP with the token's header (docs/mcp.md; the README gives the stdio lines)."""
    shown = CliRunner().invoke(omxfs, ["mcp", "--help"]).output
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text("utf-8")
    for one_line in (
        "claude mcp add omx -- omxfs mcp /path/to/ws --as alice",
        "codex mcp add omx -- omxfs mcp /path/to/ws --as alice",
        '{"mcpServers": {"omx": {"command": "omxfs", "args": ["mcp", "/path/to/ws", "--as", "alice"]}}}',
        # over HTTP, with the token the server printed (the header every request needs)
        'claude mcp add --transport http omx URL --header "Authorization: Bearer TOKEN"',
        "codex mcp add omx --url URL --bearer-token-env-var OMX_MCP_TOKEN",
        '{"mcpServers": {"omx": {"url": "URL", "headers": {"Authorization": "Bearer TOKEN"}}}}',
    ):
        assert one_line in shown and one_line in docs, one_line


def test_every_tool_works_on_a_workspace_that_is_not_mounted(tmp_path: Path) -> None:
    """After a reboot nothing is mounted: ``omxfs mcp WS --as NAME`` exited with "not a mounted workspace" and the
    client saw "Connection closed". The server runs in NAME's view, whose own daemon serves the shared zones, so the
    store directory serves as well as a mount: two clients, each its own server, share files through every zone."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: views need FUSE")
    ws = Workspace.init(tmp_path / "ws", agents=["alice", "bob"])
    assert not os.path.ismount(ws.root)
    doc = {"doc_id": "board"}

    async def body(clients: Clients) -> None:
        alice, bob = clients["alice"], clients["bob"]
        assert (await ok(bob, "save_to_my_workspace", {"filename": "plan.md", "content": "bob's plan"}))[
            "agent_id"
        ] == "bob"
        delivery = {"to_agent": "bob", "filename": "data.csv", "content": "a,b\n", "message": "chart it"}
        await ok(alice, "handoff_file", delivery)
        read = await ok(bob, "read_handoff", {"from_agent": "alice", "filename": "data.csv"})
        assert read["content"] == "a,b\n"
        first = {"filepath": "report.md", "content": "intro\n", "message": "draft", "expected_version": 0}
        assert (await ok(alice, "collab_write", first))["version"] == 1
        stale = {**first, "content": "mine\n", "message": "stale"}
        conflict = await call(bob, "collab_write", stale)
        assert conflict["is_conflict"] is True and conflict["conflict"]["current_author"] == "alice"
        await ok(alice, "realtime_create_document", {**doc, "schema": {"tasks": "or_set"}})
        for agent, client in clients.items():
            await ok(client, "realtime_set_add", {**doc, "field_name": "tasks", "element": f"{agent}'s task"})

    session(ws.root, ["alice", "bob"], body)
    assert not os.path.ismount(ws.root)  # served by the views' daemons, gone with them
    assert ws.private.read("bob", "plan.md") == b"bob's plan"
    delivered = ws.handoff.read("alice", "bob", "data.csv")
    assert (delivered.content, delivered.meta.message) == (b"a,b\n", "chart it")
    assert [(v.version, v.author) for v in ws.collab.history("report.md")] == [(1, "alice")]
    assert ws.collab.conflicts("bob", "report.md")
    assert ws.realtime.snapshot("board")["fields"] == {"tasks": ["alice's task", "bob's task"]}


def _refused(root: Path, agent: str = "alice") -> str:
    """What ``omxfs mcp ROOT --as AGENT`` said, as a real process, checked to be one line on stderr and a failure."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.omxfs", "mcp", str(root), "--as", agent],
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_a_directory_that_is_no_workspace_is_one_line(tmp_path: Path) -> None:
    said = _refused(tmp_path)
    assert said == (
        f"Error: {tmp_path} is not an omxfs workspace (no .omxfs/config.toml): create one with "
        f"`omxfs init {tmp_path} --agent NAME`\n"
    )


def test_a_stale_or_unanswering_mount_is_one_line(mount: MountFactory) -> None:
    stale, stopped = mount(), mount()
    stale.kill(signal.SIGKILL)
    assert f"{stale.root} is a stale mount (its daemon died): run `omxfs umount {stale.root}`" in _refused(stale.root)
    poll(lambda: "ready:" in stopped.log(), what="the daemon to finish starting")
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    try:
        said = _refused(stopped.root)
    finally:
        os.kill(stopped.proc.pid, signal.SIGCONT)
    assert f"{stopped.root} is a mount whose daemon does not answer" in said


def test_an_agent_the_workspace_does_not_have_is_one_line_on_stderr(mount: MountFactory) -> None:
    m = mount(agents=["alice", "bob"])
    assert _refused(m.root, "mallory").startswith("Error: no agent named 'mallory'")


def test_the_server_refuses_to_start_as_an_agent_its_process_is_not(mount: MountFactory) -> None:
    """Started by hand as alice (OMX_AGENT) for bob, the server says so in one line instead of serving."""
    m = mount(agents=["alice", "bob"])
    done = subprocess.run(
        [sys.executable, "-m", SERVER_MODULE, str(m.root), "bob"],
        env=clean_env("alice"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: this process is 'alice' on the mount (OMX_AGENT), not 'bob'")
    assert done.stderr.count("\n") == 1


def test_the_server_runs_in_the_agents_view() -> None:
    """In ``omxfs run WS --as NAME`` the kernel fixes the server's identity (issue 17: "run it inside omxfs run")."""
    argv = server_command("/ws", "bob", 8123)
    server = [sys.executable, "-P", "-m", SERVER_MODULE, "/ws", "bob", "--http", "8123"]
    assert argv == [sys.executable, "-P", "-m", "cli.omxfs", "run", "/ws", "--as", "bob", "--", *server]


def test_a_server_in_a_branch_holds_the_agents_writes_apart_until_accepted(mount: MountFactory) -> None:
    """``omxfs mcp --branch``: the server runs in the branch's view, so a save lands in the branch, and the zone
    stays as it was for everyone until a person accepts it; a plain server is refused while the branch is pending."""
    m = mount(agents=["alice", "bob"], default="alice")
    Path(m.store, "agents/bob/keep.md").write_text("A\n", encoding="utf-8")

    async def run() -> None:
        with anyio.fail_after(60):
            async with Client(_params(m.root, "bob", "--branch", "mcp1")) as bob:
                await ok(bob, "save_to_my_workspace", {"filename": "keep.md", "content": "B\n"})
                read = await ok(bob, "read_from_workspace", {"agent_id": "bob", "filename": "keep.md"})
                assert read["content"] == "B\n"  # the branch, as the server sees it

    anyio.run(run)
    assert m.path("agents/bob/keep.md").read_text("utf-8") == "A\n"  # held apart
    plain = subprocess.run([sys.executable, "-m", "cli.omxfs", "mcp", str(m.root), "--as", "bob"], input="",
                           capture_output=True, text=True, timeout=60, env=clean_env(), check=False)  # fmt: skip
    assert plain.returncode != 0 and "bob has branch mcp1 pending" in plain.stderr, plain.stderr
    accepted = CliRunner().invoke(omxfs, ["accept", str(m.root), "bob", "--branch", "mcp1", "--as", "bob"])
    assert accepted.exit_code == 0, accepted.output
    assert m.path("agents/bob/keep.md").read_text("utf-8") == "B\n"
