"""Model-based fuzzing of the realtime zone: random reads and writes of every field type by three identities,
interleaved, through a real mount, against the CRDT model (SPEC §5).

Each identity is one long-lived process (``OMX_AGENT``) that reads and writes field files on command. The model
is an ``omxfs.crdt.Document`` driven the way SPEC §5 says a write is meant: as CRDT operations against the value
the writer last read. An identity reads a field (its base), others may write meanwhile, then it writes an edit
of the text it read; after every step the stored document must equal the model, and every read must show the
model's value. Bad writes must fail with EINVAL and change nothing.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from omxfs.crdt import Document
from tests.fuse.conftest import Mount, poll

AGENTS = ("alice", "bob", "carol")
SCHEMA = {"title": "lww_register", "body": "rga", "tags": "or_set", "settings": "lww_map", "count": "pn_counter"}
SETTINGS = settings(
    max_examples=int(os.environ.get("OMX_FUZZ_EXAMPLES", "12")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SERVER = textwrap.dedent("""
    import json, os, sys
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "read":
                with open(cmd["path"], "rb") as f:
                    out = {"data": f.read().decode("utf-8")}
            else:
                flags = os.O_WRONLY | (os.O_APPEND if cmd["append"] else os.O_TRUNC)
                fd = os.open(cmd["path"], flags)
                try:
                    os.write(fd, cmd["data"].encode("utf-8", "surrogateescape"))
                finally:
                    os.close(fd)
                out = {"data": None}
        except OSError as exc:
            out = {"errno": exc.errno}
        print(json.dumps(out), flush=True)
""")


class Identity:
    """A process acting as ``agent`` in the mount, one command at a time."""

    def __init__(self, m: Mount, agent: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            cwd=m.root,
            env=m.env(agent),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(10)
        self.proc.stdout.close()


def edit(field_type: str, text: str, data: st.DataObject) -> tuple[str, bool]:
    """A new text for a field whose file read ``text``, and whether it is written with O_APPEND."""
    if field_type == "lww_register":
        return data.draw(st.text("ab \n", max_size=6)), False
    if field_type == "rga":
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, min(3, len(text) - at)))
        return text[:at] + data.draw(st.text("xyz\n", max_size=4)) + text[at + cut :], False
    if field_type == "or_set":
        lines = set(text.splitlines())
        element = data.draw(st.sampled_from(["red", "green", "blue", "grey"]))
        lines.symmetric_difference_update({element})
        return "".join(f"{line}\n" for line in sorted(lines)), False
    if field_type == "lww_map":
        mapping = json.loads(text or "{}")
        key = data.draw(st.sampled_from(["k1", "k2", "k3"]))
        if key in mapping and data.draw(st.booleans()):
            del mapping[key]
        else:
            mapping[key] = data.draw(st.sampled_from(["on", "off", "auto"]))
        return json.dumps(mapping, sort_keys=True), False
    if data.draw(st.booleans()):
        return f"{data.draw(st.sampled_from('+-'))}{data.draw(st.integers(0, 5))}", True
    return str(data.draw(st.integers(-10, 10))), False


class RealtimeModel(RuleBasedStateMachine):
    mount: Mount
    identities: dict[str, Identity]
    n = 0

    def __init__(self) -> None:
        super().__init__()
        RealtimeModel.n += 1
        self.doc = f"fuzz{RealtimeModel.n}"
        self.mount.ws.realtime.create("alice", self.doc, SCHEMA)
        self.model = Document(self.doc, SCHEMA)
        self.bases: dict[tuple[str, str], tuple[str, Any]] = {}  # (agent, field) -> (text read, CRDT base)

    def path(self, field: str) -> str:
        return f"realtime/{self.doc}/{field}"

    @rule(agent=st.sampled_from(AGENTS), field=st.sampled_from(sorted(SCHEMA)))
    def read(self, agent: str, field: str) -> None:
        answer = self.identities[agent].ask(op="read", path=self.path(field))
        assert "errno" not in answer, answer
        self.bases[(agent, field)] = (answer["data"], self.model.copy().field(field).base())

    @precondition(lambda self: bool(self.bases))
    @rule(data=st.data())
    def write(self, data: st.DataObject) -> None:
        agent, field = data.draw(st.sampled_from(sorted(self.bases)))
        text, base = self.bases.pop((agent, field))
        new, append = edit(SCHEMA[field], text, data)
        answer = self.identities[agent].ask(op="write", path=self.path(field), data=new, append=append)
        assert "errno" not in answer, (agent, field, text, new, answer)
        crdt = self.model.field(field)
        if append:
            crdt.write_text(crdt.base(), new, agent)  # "+K" counts K whatever was read
        elif new != text:
            crdt.write_text(base, new, agent)
        if new == "" and not append:
            # O_TRUNC with nothing written is committed at the last close, the release, which the kernel sends
            # after close() has returned (see staging.StagedHandle): wait for it, with a deadline.
            poll(self.matches, what=f"the emptied {field} to be committed")

    def matches(self) -> bool:
        return bool(self.mount.ws.realtime.snapshot(self.doc)["fields"] == self.model.snapshot()["fields"])

    @rule(agent=st.sampled_from(AGENTS), bad=st.sampled_from([("count", "seven"), ("settings", "{"), ("nope", "x")]))
    def bad_write(self, agent: str, bad: tuple[str, str]) -> None:
        field, data = bad
        answer = self.identities[agent].ask(op="write", path=self.path(field), data=data, append=False)
        assert answer.get("errno") in ((errno.EINVAL,) if field in SCHEMA else (errno.ENOENT,)), answer
        self.bases.pop((agent, field), None)  # a failed write observed nothing new

    @rule(agent=st.sampled_from(AGENTS))
    def invalid_utf8(self, agent: str) -> None:
        answer = self.identities[agent].ask(op="write", path=self.path("title"), data="\udcff\udcfe", append=False)
        assert answer.get("errno") == errno.EINVAL, answer

    @invariant()
    def store_equals_model(self) -> None:
        assert self.mount.ws.realtime.snapshot(self.doc)["fields"] == self.model.snapshot()["fields"]


def test_realtime_edits_from_three_identities_match_the_crdt_model(mount: Callable[..., Mount]) -> None:
    m = mount(agents=AGENTS, default="alice")
    identities = {agent: Identity(m, agent) for agent in AGENTS}
    RealtimeModel.mount = m
    RealtimeModel.identities = identities
    try:
        run_state_machine_as_test(RealtimeModel, settings=SETTINGS)
    finally:
        for identity in identities.values():
            identity.close()


@pytest.mark.parametrize("field", ["count", "tags"])
def test_a_write_on_a_base_older_than_another_writers_keeps_both(mount: Callable[..., Mount], field: str) -> None:
    """The interleaving the machine above relies on, spelled out once: read, read, write, write."""
    m = mount(agents=AGENTS, default="alice")
    m.ws.realtime.create("alice", "doc", SCHEMA)
    a, b = Identity(m, "alice"), Identity(m, "bob")
    try:
        path = f"realtime/doc/{field}"
        a.ask(op="read", path=path)
        b.ask(op="read", path=path)
        a.ask(op="write", path=path, data="2" if field == "count" else "red\n", append=False)
        b.ask(op="write", path=path, data="3" if field == "count" else "blue\n", append=False)
        value = m.ws.realtime.snapshot("doc")["fields"][field]
        assert value == (5 if field == "count" else ["blue", "red"])
    finally:
        a.close()
        b.close()
