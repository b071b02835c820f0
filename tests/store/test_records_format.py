"""The store's records (``omxfs.store.records``) accept exactly the JSON objects of their format and write the
same bytes as before they were plain classes: a pydantic model of each, in strict mode (a field's JSON type as
the store writes it, no coercion; only the keys the files use), is the reference. Generated objects (a valid record
with keys dropped or added and values replaced by other JSON values or near-miss strings) are accepted by both or
refused by both, and one accepted reads back and dumps alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omxfs.errors import InvalidInput, StoreCorrupt
from omxfs.store.layout import BLOB, STAGED
from omxfs.store.names import AGENT_NAME, relative_path
from omxfs.store.records import (
    HandoffMeta,
    Record,
    VersionEntry,
    VersionRecord,
    dump_history,
    dump_version_record,
    load_handoff_meta,
    load_history,
    load_version_record,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RefEntry(_Strict):
    version: int = Field(ge=1)
    author: str
    message: str
    timestamp: str
    sha256: str = Field(pattern=f"^{BLOB.pattern}$")
    provenance: dict[str, str] | None = None


class RefRecord(RefEntry):
    staged: str | None = Field(default=None, pattern=f"^{STAGED.pattern}$")


class RefMeta(_Strict):
    sender: str = Field(alias="from", pattern=f"^{AGENT_NAME.pattern}$")
    recipient: str = Field(alias="to", pattern=f"^{AGENT_NAME.pattern}$")
    filename: str
    timestamp: str
    message: str
    sha256: str = Field(pattern=f"^{BLOB.pattern}$")
    provenance: dict[str, str] | None = None

    @field_validator("filename")
    @classmethod
    def _normalized(cls, value: str) -> str:
        try:
            normal = str(relative_path(value))
        except InvalidInput as exc:
            raise ValueError(exc.message) from None
        if normal != value:
            raise ValueError("not normalized")
        return value


SHA = "0123456789abcdef" * 4
ENTRY = {"version": 3, "author": "alice", "message": "m", "timestamp": "2026-11-29T10:00:00Z", "sha256": SHA}
RECORD = {**ENTRY, "staged": ".v3.0123456789abcdef.staged", "provenance": {"run": "r1", "step": "2"}}
META = {"from": "alice", "to": "bob", "filename": "d/e.csv", "timestamp": "t", "message": "", "sha256": SHA}

CASES: list[tuple[type[Record], type[BaseModel], dict[str, Any]]] = [
    (VersionEntry, RefEntry, ENTRY),
    (VersionRecord, RefRecord, RECORD),
    (HandoffMeta, RefMeta, META),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
near_misses = st.sampled_from(
    [SHA + "\n", SHA.upper(), SHA[:-1], "../x", "/etc/passwd", "a//b", "./a", "al/ice", "Alice", "-x", "", "a\nb",
     ".v3.0123456789abcdef.staged/x", "../.v3.0123456789abcdef.staged", "ok", "d/e.csv", "bob", "1", "1.0", "é"]
)  # fmt: skip


@st.composite
def variants(draw: st.DrawFn, valid: dict[str, Any]) -> dict[str, Any]:
    data = dict(valid)
    keys = [*valid, "provenance", "staged", "sender", "recipient", "extra"]
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(["drop", "value", "near", "provenance"]))
        if action == "drop":
            data.pop(key, None)
        elif action == "value":
            data[key] = draw(json_values)
        elif action == "near":
            data[key] = draw(near_misses)
        else:
            data[key] = draw(st.dictionaries(st.text(max_size=3), json_values | near_misses, max_size=2))
    return data


def ours(cls: type[Record], data: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return cls.from_json(data).to_json()
    except InvalidInput:
        return None


def reference(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return model.model_validate(data).model_dump(by_alias=True, exclude_none=True)
    except ValidationError:
        return None


@pytest.mark.parametrize(("cls", "model", "valid"), CASES, ids=["entry", "record", "meta"])
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_a_record_accepts_what_its_format_does_and_dumps_it_alike(
    cls: type[Record], model: type[BaseModel], valid: dict[str, Any], data: st.DataObject
) -> None:
    candidate = data.draw(variants(valid))
    assert ours(cls, candidate) == reference(model, candidate), candidate


def test_the_bytes_written_are_the_format_s() -> None:
    entry = VersionEntry(**{k: v for k, v in ENTRY.items()})
    assert dump_history([entry]) == b"[\n" + json.dumps(ENTRY).encode() + b"\n]\n"
    record = VersionRecord.from_json(RECORD)
    assert json.loads(dump_version_record(record)) == RECORD
    assert list(json.loads(dump_version_record(record))) == list(RefRecord.model_validate(RECORD).model_dump())
    meta = HandoffMeta(sender="alice", recipient="bob", filename="d/e.csv", timestamp="t", message="", sha256=SHA)
    assert meta.to_json() == META and list(meta.to_json()) == list(META)
    assert record.entry() == VersionEntry(**{**ENTRY, "provenance": {"run": "r1", "step": "2"}})


@pytest.mark.parametrize(
    ("load", "raw", "said"),
    [
        (load_history, b'[{"version": 1}]', "author: Field required"),
        (load_history, b"{}", "Input should be a list"),
        (load_history, b"[1", "Expecting"),
        (load_version_record, json.dumps({**RECORD, "staged": "../x"}).encode(), "String should match pattern"),
        (load_version_record, json.dumps({**RECORD, "version": True}).encode(), "version: Input should be a valid"),
        (load_handoff_meta, json.dumps({**META, "sender": "alice"}).encode(), "sender: Extra inputs"),
        (load_handoff_meta, json.dumps({**META, "filename": "a/../b"}).encode(), "filename: "),
    ],
)
def test_a_bad_record_read_back_is_corruption_that_names_its_field(load: Any, raw: bytes, said: str) -> None:
    with pytest.raises(StoreCorrupt, match="where: unreadable") as raised:
        load(raw, "where")
    assert said in raised.value.message, raised.value.message


def test_a_record_made_with_a_bad_field_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"provenance\.run: Input should be a valid string"):
        VersionEntry(**{**ENTRY, "provenance": {"run": 1}})  # type: ignore[dict-item]
    with pytest.raises(InvalidInput, match="to: String should match pattern"):
        HandoffMeta(sender="alice", recipient="b/c", filename="x", timestamp="t", message="", sha256=SHA)
