"""The web app of ``omxfs ui``: server-rendered pages (Jinja2, autoescape on), live rows over server-sent events,
and the supervisor's actions, each one store call.

Who acts is fixed at start (``--as NAME``): a supervisor of the workspace may act (roll a collaborative file back,
restore a checkpoint, accept or discard a pending review or branch), checked again at each action against the config
as it is then, and the store audits the action with this process's uid (the person's). Anyone else, or no one named,
gets the same pages read-only: every agent may read every zone (SPEC §4), so there is nothing to hide from a
non-supervisor; there is nothing for them to do here either.

Reading is done in worker threads (the store's calls block); the feed is polled every ``POLL`` seconds in one, and
its new events go to every open page's queue.

**No event between a page and its stream is lost.** A page is rendered first and opens its event stream (``/events``)
afterwards, so the feed may find an event in between: too late for the page's HTML, too early for a queue that is
not there yet. Every event is numbered as the feed adds it (``arrivals``); a page carries the number of the newest
event it was rendered after (``data-cursor``) and asks its stream for what came after it (``?after=N``, and on a
reconnect the browser's ``Last-Event-ID``: each event's ``id`` is its number). The stream takes those events and
registers its queue under the lock the poll adds under, so every event is either in the replay or in the queue; one
in both (added before the replay was taken, queued after) is sent once, by its number.

The numbers are this server's: another one (``omxfs ui`` started again) finds the store's events anew and numbers
them its own way, the events of files removed meanwhile gone. So a cursor and an id carry the server's ``epoch``
(``EPOCH-N``), and a page rendered by another server is told to load itself again, where its cursor would have
been taken for one of this server's and left it without what it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import urlencode

import anyio.to_thread
from jinja2 import Environment, PackageLoader
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from omxfs.checkpoints import ZoneHistory, restore
from omxfs.checkpoints.branches import REVIEW, check_name
from omxfs.checkpoints.review import Review, accept, discard
from omxfs.errors import OmxError
from omxfs.store.workspace import Workspace
from omxfs.ui import pages, shown
from omxfs.ui.arrivals import Arrival
from omxfs.ui.branches import pending_names, zone_branches
from omxfs.ui.chart import chart
from omxfs.ui.feed import KINDS, MARK, Event, Feed, Filter, chosen
from omxfs.ui.guard import Guard, same
from omxfs.ui.lists import Lists
from omxfs.ui.needs import Needs
from omxfs.ui.refusals import Refusals, grouped
from omxfs.ui.run_records import RunRecords

#: seconds between two polls of the store (an event shows in an open page within about this, plus a page's work)
POLL = 0.2
#: rows the Activity page shows
ROWS = 300
#: the live pages' refresh after an event, at most this often (seconds)
REFRESH = 0.5
#: seconds the Needs-you count is kept while no event comes
RECOUNT = 5.0


class Snapshot(NamedTuple):
    events: list[Event]  # the feed's events, oldest first
    cursor: int  # the number of the newest of them to arrive: a page shows them all, its stream sends what follows


@dataclass
class State:
    ws: Workspace
    feed: Feed
    token: str
    actor: str | None
    lists: Lists
    runs: RunRecords
    needs: Needs
    refusals: Refusals
    queues: set[asyncio.Queue[list[Arrival]]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    epoch: str = field(default_factory=lambda: secrets.token_hex(4))  # this server's, in every cursor and id
    counted: tuple[int, float, int] | None = None  # the Needs-you count: (cursor, monotonic time, count)

    def waiting(self) -> int:
        """The Needs-you count, read again once an event came since (or ``RECOUNT`` seconds passed: a view's
        limit is in its log, which makes no event); every page's header asks for it."""
        cursor, now = self.cursor(), time.monotonic()  # before the reading: an event during it makes the next one read
        counted = self.counted
        if counted is not None and counted[0] == cursor and now - counted[1] < RECOUNT:
            return counted[2]
        count = self.needs.count()
        self.counted = (cursor, now, count)
        return count

    def mark(self, number: int) -> str:
        """Event ``number`` as a cursor or an event's id: ``EPOCH-N``."""
        return f"{self.epoch}-{number}"

    def number_of(self, mark: str) -> int | None:
        """The number a cursor or id of this server marks; None for another server's (or none at all)."""
        epoch, _, number = mark.rpartition("-")
        return int(number) if epoch == self.epoch and number.isdecimal() else None

    def may_act(self) -> bool:
        return self.actor is not None and self.ws.is_supervisor(self.actor)

    def snapshot(self) -> Snapshot:
        with self.lock:
            return Snapshot(list(self.feed.events), self.feed.arrivals.last)

    def cursor(self) -> int:
        """The newest event's number: a page that reads the store after this learns of every later event by its
        stream (an event the page already shows then reloads it once more, which is harmless)."""
        with self.lock:
            return self.feed.arrivals.last

    def listen(self, cursor: int | None) -> tuple[list[Arrival] | None, int, asyncio.Queue[list[Arrival]]]:
        """A new stream's replay (every event after ``cursor``; None where some are no longer kept; none without a
        cursor), the number of the newest event then, and its queue, registered in the same hold of the lock the
        poll adds under: no event falls between the replay and the queue."""
        queue: asyncio.Queue[list[Arrival]] = asyncio.Queue()
        with self.lock:
            replay = [] if cursor is None else self.feed.arrivals.after(cursor)
            self.queues.add(queue)
            return replay, self.feed.arrivals.last, queue

    def poll(self) -> list[Arrival]:
        """One poll of the feed (only the app's watch calls it); the pages wait for the adding only."""
        found = self.feed.find()
        with self.lock:
            return self.feed.add(found)


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def environment() -> Environment:
    env = Environment(loader=PackageLoader("omxfs.ui", "templates"), autoescape=True)
    env.filters["line"] = shown.line
    env.filters["when"] = _when
    env.filters["query"] = lambda values: urlencode({k: v for k, v in values.items() if v not in (None, "")})
    return env


def build(ws: Workspace, token: str, actor: str | None, shown_as: str) -> Starlette:
    """The app for ``ws`` (without its ``Guard``: ``guarded`` adds it once the port is known). Its pages name the
    workspace ``shown_as``, as the person named it: ``ws.root`` may be a descriptor's path (``/proc/self/fd/N``, the
    store beneath a mount in place), which means nothing to them."""
    env = environment()
    feed, lists, records = Feed(ws.root), Lists(ws), RunRecords(ws)
    queue = Needs(ws, lists, records, feed.marks, feed.limits)  # the view limits read once, for the feed and it
    state = State(ws, feed, token, actor, lists, records, queue, Refusals(ws))

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        """``context`` may hold the page's ``cursor`` (``State.cursor``, taken before its reading), else it is now;
        and ``waiting``, the Needs-you count of the header (else the page asks for it once its stream is ready)."""
        nonce = secrets.token_urlsafe(16)
        context["cursor"] = state.mark(context.get("cursor", state.cursor()))
        context.setdefault("waiting", None)
        body = env.get_template(name).render(
            request=request,
            nonce=nonce,
            token=state.token,
            actor=state.actor,
            may_act=state.may_act(),
            workspace=shown_as,
            page=request.url.path,
            **context,
        )
        # Defense in depth beside the escaping: only our own inline script (by its nonce) runs, nothing is framed.
        policy = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        # same-origin, not no-referrer: under no-referrer chromium sends a form's POST with "Origin: null"
        headers = {"content-security-policy": policy, "referrer-policy": "same-origin", "cache-control": "no-store"}
        return HTMLResponse(body, status, headers=headers)

    def failed(request: Request, exc: Exception, status: int = 404) -> HTMLResponse:
        message = exc.message if isinstance(exc, OmxError) else str(exc)
        return render(request, "error.html", status, message=message)

    async def threaded(request: Request, name: str, read: Callable[[], dict[str, Any]]) -> HTMLResponse:
        """The page ``read`` makes the context of; its cursor is taken before, unless ``read`` gives its own."""
        cursor = state.cursor()

        def read_all() -> dict[str, Any]:
            return {"waiting": state.waiting(), **read()}

        try:
            context = await run_in_threadpool(read_all)
        except (OmxError, ValueError, OSError) as exc:
            return failed(request, exc)
        return render(request, name, **{"cursor": cursor, **context})

    # -- pages ------------------------------------------------------------------------------------------------

    async def home(request: Request) -> Response:
        return RedirectResponse("/team", 303)

    async def team(request: Request) -> Response:
        return await threaded(
            request,
            "team.html",
            lambda: pages.team(
                ws, state.snapshot().events, state.needs.open_conflicts(), grouped(state.refusals.all())
            ),
        )

    async def needs(request: Request) -> Response:
        def read() -> dict[str, Any]:
            items = state.needs.items(stat=True)
            return {"needs": items, "waiting": len(items), "done": request.query_params.get("done", "")}

        return await threaded(request, "needs.html", read)

    async def needs_count(request: Request) -> Response:
        """The Needs-you count alone, as text: what a page's header shows after each event."""
        count = await run_in_threadpool(state.waiting)
        return Response(str(count), media_type="text/plain", headers={"cache-control": "no-store"})

    def activity_filter(request: Request) -> Filter:
        q = request.query_params

        def moment(name: str) -> float:
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(q.get(name, "")).timestamp()
            return 0.0

        return Filter(q.get("agent", ""), q.get("zone", ""), q.get("kind", ""), moment("since"), moment("until"))

    async def activity(request: Request) -> Response:
        keep = activity_filter(request)

        def read() -> dict[str, Any]:
            events, cursor = state.snapshot()  # the rows and the cursor of one moment: no row twice, none missed
            kept = [e for e in events if keep.keeps(e)]
            zones = sorted({e.zone.split("/", 1)[0] for e in events} | {e.zone for e in events})
            return {
                "events": chosen(kept, Filter(), ROWS),
                "total": len(kept),
                "chart": chart(kept),
                "agents": sorted({*ws.config.agents, *ws.config.supervisors, *(e.agent for e in events)}),
                "zones": zones,
                "kinds": KINDS,
                "filter": dict(request.query_params),
                "notice": state.feed.zones.notice,  # no inotify, or its watch limit reached: some writes show later
                "cursor": cursor,
            }

        return await threaded(request, "activity.html", read)

    def cursor_of(request: Request) -> tuple[int | None, bool]:
        """Where the stream resumes: the browser's ``Last-Event-ID`` on a reconnect, else the page's ``after``; and
        whether one was given that this server did not make (a page of another ``omxfs ui``: it loads itself
        again)."""
        given = request.headers.get("last-event-id") or request.query_params.get("after", "")
        number = state.number_of(given)
        return number, bool(given) and number is None

    async def events(request: Request) -> Response:
        """Server-sent events, each event's ``id`` its number (``State.mark``): first every event after the page's
        cursor, then ``ready``, then the new ones as the feed finds them; ``feed`` with a rendered row per event the
        page's filter keeps, ``tick`` after each batch (pages that show a state, not a list, reload it), ``reload``
        where the events after the cursor are no longer all kept, or the cursor is another server's (the page loads
        itself again)."""
        keep = activity_filter(request)
        row = env.get_template("row.html")
        cursor, stale = cursor_of(request)

        def batch_events(batch: list[Arrival]) -> Iterator[ServerSentEvent]:
            for seq, event in batch:
                if keep.keeps(event):
                    yield ServerSentEvent(event="feed", data=row.render(e=event), id=state.mark(seq))
            yield ServerSentEvent(event="tick", data=str(len(batch)), id=state.mark(batch[-1].seq))

        async def stream() -> AsyncIterator[ServerSentEvent]:
            # registered once the stream runs: a request that ends before leaves no queue behind to fill
            replay, sent, queue = state.listen(cursor)
            try:
                if replay is None or stale:
                    yield ServerSentEvent(event="reload", data="", id=state.mark(sent))
                elif replay:
                    for sse in batch_events(replay):
                        yield sse
                yield ServerSentEvent(event="ready", data="")  # no id: without a cursor, the stream it always was
                while True:
                    batch = [arrival for arrival in await queue.get() if arrival.seq > sent]  # not replayed already
                    if batch:
                        sent = batch[-1].seq
                        for sse in batch_events(batch):
                            yield sse
            finally:
                state.queues.discard(queue)

        return EventSourceResponse(stream(), ping=15, headers={"cache-control": "no-store"})

    async def handoffs(request: Request) -> Response:
        return await threaded(request, "handoffs.html", lambda: {"boxes": state.lists.handoffs()})

    async def collab(request: Request) -> Response:
        return await threaded(
            request, "collab.html", lambda: {"files": state.lists.collab_files(), "conflicts": state.needs.conflicts()}
        )

    async def collab_file(request: Request) -> Response:
        path = request.query_params.get("path", "")

        def read() -> dict[str, Any]:
            history = ws.collab.history(path)
            if not history:
                raise OmxError(f"collaborative/{path}: no such file")
            newest = history[-1].version
            a = int(request.query_params.get("a") or max(newest - 1, 1))
            b = int(request.query_params.get("b") or newest)
            shown_version = int(request.query_params.get("v") or newest)
            content, size = pages.version_text(ws, path, shown_version)
            return {
                "path": path,
                "history": list(reversed(history)),
                "newest": newest,
                "a": a,
                "b": b,
                "diff": pages.version_diff(ws, path, a, b),
                "shown_version": shown_version,
                "content": shown.content(content, size),
                "done": request.query_params.get("done", ""),
            }

        return await threaded(request, "collab_file.html", read)

    async def collab_conflict(request: Request) -> Response:
        record = request.query_params.get("record", "")
        return await threaded(request, "conflict.html", lambda: {"c": pages.conflict(ws, record)})

    async def realtime(request: Request) -> Response:
        return await threaded(request, "realtime.html", lambda: {"docs": pages.realtime(ws)})

    async def checkpoints(request: Request) -> Response:
        return await threaded(
            request,
            "checkpoints.html",
            lambda: {
                "zones": [(a, len(ZoneHistory(ws, a).numbers())) for a in ws.agents()],
                "reviews": [{"agent": a, **r} for a in ws.agents() if (r := pages.pending_review(ws, a)) is not None],
                "branches": [(a, b) for a in ws.agents() if (b := [n for n in pending_names(ws, a) if n != REVIEW])],
            },
        )

    def zone_page(request: Request, agent: str, refused: str = "") -> Callable[[], dict[str, Any]]:
        q = request.query_params

        def read() -> dict[str, Any]:
            made = pages.checkpoints(ws, agent)
            source = q.get("from") or (made[0]["id"] if made else "")
            target = q.get("to") or ""
            return {
                "agent": agent,
                "made": made,
                "source": source,
                "target": target,
                "diff": pages.checkpoint_diff(ws, agent, source, target or None) if source else None,
                "review": pages.review_diff(ws, agent),
                "branches": [name for name in pending_names(ws, agent) if name != REVIEW],
                "done": q.get("done", ""),
                "refused": refused,
            }

        return read

    async def zone_checkpoints(request: Request) -> Response:
        agent = request.path_params["agent"]
        return await threaded(request, "zone_checkpoints.html", zone_page(request, agent))

    def branches_page(request: Request, agent: str, refused: str = "") -> Callable[[], dict[str, Any]]:
        done = request.query_params.get("done", "")
        return lambda: {"agent": agent, "branches": zone_branches(ws, agent), "done": done, "refused": refused}

    async def zone_branches_page(request: Request) -> Response:
        agent = request.path_params["agent"]
        return await threaded(request, "branches.html", branches_page(request, agent))

    async def runs(request: Request) -> Response:
        return await threaded(request, "runs.html", lambda: {"runs": pages.run_rows(ws, state.runs.all())})

    async def run(request: Request) -> Response:
        agent, stamp = request.path_params["agent"], request.path_params["stamp"]
        return await threaded(request, "run.html", lambda: {"r": pages.run(ws, agent, stamp)})

    # -- actions ----------------------------------------------------------------------------------------------

    async def check_form(request: Request) -> dict[str, str]:
        """The posted form, if it carries the token and a supervisor acts; else PermissionError."""
        form = await request.form()
        values = {k: v for k, v in form.items() if isinstance(v, str)}
        if not same(values.get("token"), state.token):
            raise PermissionError("the form carries no valid token: reload the page")
        if not state.may_act():
            raise PermissionError(
                "read-only: start `omxfs ui` with --as a supervisor of this workspace to act"
                if state.actor is None
                else f"{state.actor} is no supervisor of this workspace: the page is read-only"
            )
        return values

    async def rollback(request: Request) -> Response:
        try:
            form = await check_form(request)
        except PermissionError as exc:
            return failed(request, exc, 403)
        path, version = form.get("path", ""), int(form.get("version") or 0)
        actor = state.actor
        assert actor is not None

        def act() -> str:
            expected = int(form.get("expected") or -1)
            entry = ws.collab.rollback(
                actor,
                path,
                version,
                message=f"rollback to version {version} by {actor} (omxfs ui)",
                expected_version=expected,
            )
            ws.audit(
                actor, f"rollback to version {version} as version {entry.version} (omxfs ui)", f"collaborative/{path}"
            )
            return f"rolled back to version {version}: now version {entry.version}"

        try:
            done = await run_in_threadpool(act)
        except (OmxError, ValueError) as exc:
            return failed(request, exc, 409)
        return RedirectResponse(f"/collab/file?{urlencode({'path': path, 'done': done})}", 303)

    async def restore_checkpoint(request: Request) -> Response:
        agent = request.path_params["agent"]
        try:
            form = await check_form(request)
        except PermissionError as exc:
            return failed(request, exc, 403)
        actor = state.actor
        assert actor is not None

        def act() -> str:
            history = ZoneHistory(ws, ws.require_known(agent))
            number = history.resolve(form.get("checkpoint", ""))
            done = restore(history, actor, number)
            return f"restored {agent}'s zone to checkpoint {done.checkpoint} ({done.files} file(s)); undo: {done.undo}"

        try:
            done = await run_in_threadpool(act)
        except (OmxError, ValueError) as exc:
            return failed(request, exc, 409)
        return RedirectResponse(f"/checkpoints/{agent}?{urlencode({'done': done})}", 303)

    async def decide_review(request: Request, decide: Callable[[Review, str], str]) -> Response:
        """Accept or discard ``agent``'s pending review, or its branch the form names (``branch``), as the
        supervisor; a refusal of the store (a view of the zone still running, nothing pending, a conflicted branch)
        is one line on the page the form was on, which is shown again (409)."""
        agent = request.path_params["agent"]
        try:
            form = await check_form(request)
        except PermissionError as exc:
            return failed(request, exc, 403)
        actor, back = state.actor, form.get("back")
        assert actor is not None

        def act() -> str:
            return decide(Review(ws, ws.require_known(agent), check_name(form.get("branch") or REVIEW)), actor)

        try:
            done = await run_in_threadpool(act)
        except (OmxError, ValueError, OSError) as exc:  # OSError: a half-done accept, which accepting again ends
            refused = exc.message if isinstance(exc, OmxError) else str(exc)
            on_branches = back == "branches"
            read = branches_page(request, agent, refused) if on_branches else zone_page(request, agent, refused)
            try:
                context = await run_in_threadpool(read)
            except (OmxError, ValueError, OSError) as again:
                return failed(request, again, 409)
            return render(request, "branches.html" if on_branches else "zone_checkpoints.html", 409, **context)
        if back == "/needs":  # decided from the Needs-you page: back there
            return RedirectResponse(f"/needs?{urlencode({'done': done})}", 303)
        if back == "branches":  # decided on the zone's branches page
            return RedirectResponse(f"/checkpoints/{agent}/branches?{urlencode({'done': done})}", 303)
        return RedirectResponse(f"/checkpoints/{agent}?{urlencode({'done': done})}#reviews", 303)

    def accepted(review: Review, actor: str) -> str:
        done = accept(review, actor)
        finished = " (an interrupted accept, finished)" if done.resumed else ""
        if done.into is not None:
            return f"accepted {review.called} into branch {done.into}{finished}: the zone is unchanged until it is"
        return f"accepted {review.called}{finished}; undo: restore checkpoint {done.undo}"

    def discarded(review: Review, actor: str) -> str:
        discard(review, actor)
        return f"discarded {review.called}: the zone is as it was"

    async def mark_resolved(request: Request) -> Response:
        """Mark what waits for the person (a conflict, a run, a view's limit: its path) resolved: an audit record
        of the store's (``feed.MARK``), which the feed also reads back after a restart."""
        try:
            form = await check_form(request)
        except PermissionError as exc:
            return failed(request, exc, 403)
        path, actor = form.get("path", ""), state.actor
        assert actor is not None

        def act() -> str:
            if path not in state.needs.marks_of():
                raise OmxError(f"{path}: nothing waits under this name (resolved already?)")
            ws.audit(actor, MARK, path)
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the audit record's own is read back by the feed
            state.feed.marks.setdefault(path, {"agent": actor, "timestamp": now, "action": MARK, "path": path})
            state.counted = None
            return f"marked {path} resolved"

        try:
            done = await run_in_threadpool(act)
        except OmxError as exc:
            return failed(request, exc, 409)
        return RedirectResponse(f"/needs?{urlencode({'done': done})}", 303)

    async def accept_review(request: Request) -> Response:
        return await decide_review(request, accepted)

    async def discard_review(request: Request) -> Response:
        return await decide_review(request, discarded)

    # -- the feed ---------------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def watch() -> None:
            while True:
                new = await anyio.to_thread.run_sync(state.poll)
                if new:
                    for queue in list(state.queues):
                        queue.put_nowait(new)
                await asyncio.sleep(POLL)

        task = asyncio.create_task(watch())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    routes = [
        Route("/", home),
        Route("/team", team),
        Route("/needs", needs),
        Route("/needs/count", needs_count),
        Route("/needs/resolve", mark_resolved, methods=["POST"]),
        Route("/activity", activity),
        Route("/events", events),
        Route("/handoffs", handoffs),
        Route("/collab", collab),
        Route("/collab/file", collab_file),
        Route("/collab/conflict", collab_conflict),
        Route("/collab/rollback", rollback, methods=["POST"]),
        Route("/realtime", realtime),
        Route("/checkpoints", checkpoints),
        Route("/checkpoints/{agent}", zone_checkpoints),
        Route("/checkpoints/{agent}/branches", zone_branches_page),
        Route("/checkpoints/{agent}/restore", restore_checkpoint, methods=["POST"]),
        Route("/checkpoints/{agent}/accept", accept_review, methods=["POST"]),
        Route("/checkpoints/{agent}/discard", discard_review, methods=["POST"]),
        Route("/runs", runs),
        Route("/runs/{agent}/{stamp}", run),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.ui = state
    return app


def guarded(app: Starlette, token: str, port: int) -> Guard:
    return Guard(app, token, port)
