"""Uploaded mahimahi traces (issue 33 item 4, webapp.uploads): POST /api/traces checks a file with
fastlab.define.linktrace and stores it under its sha256 in the server's own folder; a spec's trace then carries
`upload:<sha256>`, which the check and the worker resolve to the stored file; any other trace value (a
path) is still refused. Hostile uploads get one line naming the field, and nothing is stored or queued."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fastlab.define import linktrace
from fastlab.define.schema import SpecError, parse_spec
from fastlab.service.store import connect
from tests.webapp.conftest import good_spec, queued_count
from webapp import create_app, uploads

FIELD = "links.bottleneck.trace"
# 12 opportunities in 10 ms, repeating: 12 * 1504 B * 8 / 10 ms = 14.4384 Mb/s
TRACE = b"".join(f"{ms}\n".encode() for ms in (1, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10))


def upload(client: Any, csrf: dict[str, str], data: bytes, name: str = "link.trace", field: str = FIELD,
           content_type: str = "application/octet-stream") -> Any:
    return client.post("/api/traces", query_string={"field": field, "name": name}, data=data,
                       headers=csrf | {"Content-Type": content_type})


def stored_files(app: Any) -> list[Path]:
    folder = uploads.TraceStore.under(Path(app.config["RESULTS_ROOT"])).folder
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_an_uploaded_trace_is_checked_stored_by_its_sha256_and_named_by_reference(app, client, csrf) -> None:
    resp = upload(client, csrf, TRACE)
    assert resp.status_code == 201, resp.get_json()
    body = resp.get_json()
    sha = hashlib.sha256(TRACE).hexdigest()
    assert body["trace"] == f"upload:{sha}"
    assert (body["lines"], body["period_ms"], body["size_bytes"]) == (12, 10, len(TRACE))
    assert body["mean_rate_mbps"] == pytest.approx(14.438, abs=1e-3)
    assert [p.name for p in stored_files(app)] == [f"{sha}.txt"]
    assert stored_files(app)[0].read_bytes() == TRACE
    assert upload(client, csrf, TRACE, name="again.txt").status_code == 201  # the same content: one file
    assert len(stored_files(app)) == 1

    # the spec carries the reference; the check resolves it (the engine's prepare reads the stored file:
    # the trace's mean rate is the bottleneck's capacity) and the queued spec keeps the reference
    spec = good_spec(links={"bottleneck": {"trace": body["trace"]}})
    check = client.post("/api/validate", json=spec, headers=csrf)
    assert check.status_code == 200, check.get_json()
    assert check.get_json()["links"]["bottleneck"]["backend"] == "emulator"
    run = client.post("/api/runs", json=spec, headers=csrf)
    assert run.status_code == 201, run.get_json()
    with connect(app.config["DATABASE"]) as conn:
        queued = json.loads(conn.execute("SELECT spec FROM runs").fetchone()["spec"])
    assert queued["links"]["bottleneck"]["trace"] == body["trace"]
    # ... and a reverse direction's reference alike
    rev = good_spec(links={"bottleneck": {"reverse": {"trace": body["trace"]}}})
    assert client.post("/api/validate", json=rev, headers=csrf).status_code == 200


def test_resolve_replaces_references_with_the_stored_file_and_refuses_everything_else(tmp_path: Path) -> None:
    store = uploads.TraceStore(tmp_path / "store")
    ref = store.put(TRACE, "x", FIELD).ref
    spec = parse_spec(good_spec(links={"bottleneck": {"trace": ref, "reverse": {"trace": ref}}}))
    done = uploads.resolve(spec, store)
    stored = str(store.path(ref.removeprefix("upload:")))
    assert done.links["bottleneck"].trace == stored and done.links["bottleneck"].reverse.trace == stored
    assert spec.links["bottleneck"].trace == ref  # the spec given is left as it was
    assert linktrace.read(stored, FIELD).sha256 == ref.removeprefix("upload:")
    for bad, why in ((str(tmp_path / "store" / (ref[7:] + ".txt")), "opens no file"),
                     ("upload:" + "0" * 64, "no uploaded"), ("upload:../../etc/passwd", "opens no file"),
                     ("UPLOAD:" + ref[7:], "opens no file")):
        with pytest.raises(SpecError, match=rf"^links\.bottleneck\.trace: .*{why}"):
            uploads.resolve(parse_spec(good_spec(links={"bottleneck": {"trace": bad}})), store)


@pytest.mark.parametrize("data, why", [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), r"link\.trace:1: not a millisecond timestamp"),
    (b"", r"link\.trace is empty \(no timestamps\)"),
    (b"1\nnan\n3\n", r"link\.trace:2: not a millisecond timestamp"),
    (b"1\n-5\n9\n", r"link\.trace:2: not a millisecond timestamp"),
    (b"1\n2.5\n9\n", r"link\.trace:2: not a millisecond timestamp"),
    (b"5\n7\n6\n", r"link\.trace:3: below the line before"),
    (b"0\n0\n", r"link\.trace:2: the last timestamp is the period and must be above 0 ms"),
    (b"1\n\n2\n", r"link\.trace:2: empty line"),
    (b"99999999999\n", r"link\.trace:1: above the largest timestamp"),
    ("1\n٣\n".encode(), r"link\.trace:2: not a millisecond timestamp"),  # a digit to str.isdigit
    (b"1\n" * (linktrace.MAX_LINES + 1), r"link\.trace has more than 1,048,576 lines"),
])
def test_a_bad_trace_is_one_line_naming_the_field_and_nothing_is_stored(app, client, csrf, data: bytes,
                                                                         why: str) -> None:
    resp = upload(client, csrf, data)
    assert resp.status_code == 422, resp.get_json()
    error = resp.get_json()["error"]
    assert error.startswith(f"{FIELD}: ") and "\n" not in error and len(error) < 200, error
    assert re.search(why, error), error
    assert stored_files(app) == [] and queued_count(app) == 0


def test_a_zip_is_refused_in_one_line(app, client, csrf) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("trace.txt", TRACE)
    resp = upload(client, csrf, buf.getvalue(), name="trace.zip")
    assert resp.status_code == 422
    assert resp.get_json()["error"].startswith(f"{FIELD}: trace.zip:1: not a millisecond timestamp")
    # ... and the same zip as a multipart form (what a plain HTML form sends): not the file's bytes
    resp = client.post("/api/traces", query_string={"field": FIELD},
                       data={"file": (io.BytesIO(buf.getvalue()), "trace.zip")}, headers=csrf,
                       content_type="multipart/form-data")
    assert resp.status_code == 415, resp.get_json()
    assert stored_files(app) == []


def test_an_over_long_file_is_refused_from_its_length_before_it_is_read(app, client, csrf) -> None:
    """Content-Length above linktrace's bound: 413 with one line and the body never read (a stream that
    fails when read proves it); a body without a length is cut at the bound as it is read."""
    class Unread(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, _b: Any) -> int:
            raise AssertionError("the over-long body was read")

    big = linktrace.MAX_FILE_BYTES + 1
    resp = client.post("/api/traces", query_string={"field": FIELD}, data=b"",
                       headers=csrf | {"Content-Type": "application/octet-stream"},
                       environ_overrides={"wsgi.input": Unread(), "CONTENT_LENGTH": str(big)})
    assert resp.status_code == 413
    assert resp.get_json()["error"] == f"request body larger than {linktrace.MAX_FILE_BYTES:,} bytes"
    # a real over-long body, streamed without a length (chunked): cut, refused, nothing stored
    chunks = iter([b"1\n" * 1024 * 1024] * 5)  # 10 MiB of valid lines

    class Stream(io.RawIOBase):
        buf = b""

        def readable(self) -> bool:
            return True

        def readinto(self, b: Any) -> int:
            while not self.buf:
                self.buf = next(chunks, b"")
                if not self.buf:
                    return 0
            n = min(len(b), len(self.buf))
            b[:n], self.buf = self.buf[:n], self.buf[n:]
            return n

    resp = client.post("/api/traces", query_string={"field": FIELD}, data=b"",
                       headers=csrf | {"Content-Type": "application/octet-stream"},
                       environ_overrides={"wsgi.input": io.BufferedReader(Stream()), "CONTENT_LENGTH": "",
                                          "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True})
    assert resp.status_code in (413, 422), resp.get_json()
    assert resp.get_json()["error"] in (f"request body larger than {linktrace.MAX_FILE_BYTES:,} bytes",
                                        f"{FIELD}: file is larger than {linktrace.MAX_FILE_BYTES:,} bytes")
    assert stored_files(app) == []
    # the JSON routes keep their own, smaller bound
    assert client.post("/api/runs", data=b"{" + b" " * 300_000 + b"}", headers=csrf | {
        "Content-Type": "application/json"}).get_json()["error"] == "request body larger than 262,144 bytes"


def test_the_file_name_is_never_a_path(app, client, csrf, tmp_path: Path) -> None:
    """`../../etc/passwd` as the file's name: the file is stored under its sha256 in the store and
    nowhere else, the name only in messages, cut to its last part."""
    resp = upload(client, csrf, TRACE, name="../../etc/passwd")
    assert resp.status_code == 201
    assert resp.get_json()["name"] == "passwd"
    sha = hashlib.sha256(TRACE).hexdigest()
    every = [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == TRACE]
    assert every == [uploads.TraceStore.under(Path(app.config["RESULTS_ROOT"])).path(sha)]
    bad = upload(client, csrf, b"x\n", name="../../etc/passwd")
    assert bad.get_json()["error"] == f"{FIELD}: passwd:1: not a millisecond timestamp (digits only)"
    assert uploads.clean_name("..\\..\\win.ini") == "win.ini" and uploads.clean_name("/") == "file"
    assert uploads.clean_name("...hidden") == "hidden" and uploads.clean_name("a b;$(x)") == "a_b___x_"


@pytest.mark.parametrize("field", ["", "trace", "links.bottleneck", "links.../x.trace", "links.b.trace\n",
                                   "links." + "b" * 65 + ".trace", "flows.0.trace"])
def test_the_field_must_be_a_trace_field(app, client, csrf, field: str) -> None:
    resp = upload(client, csrf, TRACE, field=field)
    assert resp.status_code == 400 and resp.get_json()["error"].startswith("field: ")
    assert stored_files(app) == []


def test_an_upload_needs_the_csrf_token(app, client) -> None:
    resp = client.post("/api/traces", query_string={"field": FIELD}, data=TRACE,
                       headers={"Content-Type": "application/octet-stream"})
    assert resp.status_code == 403 and stored_files(app) == []


def test_a_spec_naming_a_trace_path_is_still_refused(app, client, csrf, tmp_path: Path) -> None:
    """A path in the spec (even the stored copy's own path) is not an upload's reference: refused."""
    ref = upload(client, csrf, TRACE).get_json()["trace"]
    stored = uploads.TraceStore.under(Path(app.config["RESULTS_ROOT"])).path(ref[7:])
    for trace in (str(stored), "../../etc/passwd", "/etc/passwd", ref + "\u00a0"):
        resp = client.post("/api/runs", json=good_spec(links={"bottleneck": {"trace": trace}}), headers=csrf)
        assert resp.status_code == 422
        assert resp.get_json()["error"].startswith("links.bottleneck.trace: the web app opens no file")
    assert queued_count(app) == 0


def test_the_store_is_bounded(app, client, csrf, monkeypatch) -> None:
    """A full store refuses a new file (507, one line) and still serves the ones it holds."""
    monkeypatch.setattr(uploads, "MAX_STORED_BYTES", len(TRACE) + 10)
    assert upload(client, csrf, TRACE).status_code == 201
    resp = upload(client, csrf, TRACE + b"11\n")
    assert resp.status_code == 507
    assert resp.get_json()["error"].startswith(f"{FIELD}: the server's trace store is full")
    assert upload(client, csrf, TRACE).status_code == 201 and len(stored_files(app)) == 1


def test_the_worker_runs_the_stored_file(tmp_path: Path) -> None:
    """The queued spec keeps the reference; the worker hands the engine the stored file's path."""
    seen: list[Any] = []

    def engine(spec: Any, *, out: Path, on_sample: Any) -> Any:
        seen.append(spec.links["bottleneck"].trace)
        raise RuntimeError("recorded")

    app = create_app(results_root=tmp_path / "results", start_worker=False, runner=engine)
    client = app.test_client()
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    ref = upload(client, csrf, TRACE).get_json()["trace"]
    run_id = client.post("/api/runs", json=good_spec(links={"bottleneck": {"trace": ref}}),
                         headers=csrf).get_json()["id"]
    manager = app.extensions["fastlab_runs"]
    with connect(app.config["DATABASE"]) as conn:
        spec_json = conn.execute("SELECT spec FROM runs WHERE id = ?", (run_id,)).fetchone()["spec"]
    manager.execute(run_id, spec_json)
    assert seen == [str(uploads.TraceStore.under(tmp_path / "results").path(ref[7:]))]


def test_the_run_page_names_the_uploaded_trace(app, client, csrf) -> None:
    ref = upload(client, csrf, TRACE).get_json()["trace"]
    spec = good_spec(links={"bottleneck": {"reverse": {"trace": ref}}})
    run_id = client.post("/api/runs", json=spec, headers=csrf).get_json()["id"]
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert (f"links.bottleneck.reverse.trace: the uploaded trace {ref[7:19]}…, 12 delivery opportunities every "
            "10 ms (mean 14.4 Mb/s); the run folder keeps its copy, trace_bottleneck_reverse.txt") in page
    # a CLI run's spec names its copy; a spec without traces says nothing; junk is left out
    store = uploads.TraceStore.under(Path(app.config["RESULTS_ROOT"]))
    assert uploads.describe({"links": {"b": {"trace": "trace_b_forward.txt"}}}, store) == [
        "links.b.trace: the mahimahi trace trace_b_forward.txt (a copy in the run folder)"]
    assert uploads.describe({"links": {"b": {"trace": "upload:" + "1" * 64}}}, store)[0].endswith(
        "(no longer on this server); the run folder keeps its copy, trace_b_forward.txt")
    for junk in (None, [], {"links": []}, {"links": {"b": None}}, {"links": {"b": {"reverse": 3, "trace": 5}}}):
        assert uploads.describe(junk, store) == []
