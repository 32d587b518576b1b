"""The fastlab web app's JSON API from Python (issue 36 item 3): submit a spec, follow a run, fetch
its results, from a notebook or a script on a machine without root. Only the standard library.

    from fastlab.results.client import Client
    lab = Client("http://127.0.0.1:8080")            # token="..." for a server started with one
    run = lab.submit({"name": "a30", "topology": "dumbbell", "duration_s": 10,
                      "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}]})
    lab.wait(run["id"])                              # its status when it has ended
    result = lab.results(run["id"])                  # its bundle, verified: a fastlab.results.api.Run

State-changing requests carry the per-app CSRF token, read once from a page as a browser would; a
server started with an access token needs it (`token=`). Every request is bounded in time, and a
refusal is a ClientError carrying the server's one line.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from fastlab.results import api as results

CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')
ENDED = ("done", "failed", "interrupted", "cancelled")
RUNS_PER_PAGE = 1000  # the largest page GET /api/runs answers


class ClientError(RuntimeError):
    """A request the server refused (its status and one-line reason) or could not be made."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Client:
    """One server, e.g. Client("http://127.0.0.1:8080", token=None)."""

    def __init__(self, url: str = "http://127.0.0.1:8080", token: str | None = None, timeout_s: float = 30) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self._csrf: str | None = None

    # --- transport -------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None, raw: bool = False) -> Any:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["X-Fastlab-Token"] = self.token
        data = None
        if method not in ("GET", "HEAD"):
            headers["X-CSRF-Token"] = self.csrf()
            headers["Content-Type"] = "application/json"
            data = json.dumps(body if body is not None else {}).encode()
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:  # noqa: S310 (http(s) URL given)
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            try:
                reason = json.loads(text).get("message") or json.loads(text).get("error") or text
            except (ValueError, AttributeError):
                reason = text[:200]
            raise ClientError(f"{method} {path}: {exc.code} {reason}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ClientError(f"{method} {path}: cannot reach {self.url}: {exc}") from None
        return payload if raw else json.loads(payload or b"null")

    def csrf(self) -> str:
        """The app's CSRF token, from its home page (as a browser's page carries it)."""
        if self._csrf is None:
            page = self._request("GET", "/", raw=True).decode(errors="replace")
            found = CSRF_META.search(page)
            if not found:
                raise ClientError(f"{self.url}: no CSRF token on its home page (is it a fastlab server?)")
            self._csrf = found.group(1)
        return self._csrf

    # --- the API ---------------------------------------------------------------------------------
    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The history, newest first (at most `limit` runs): GET /api/runs a page at a time."""
        out: list[dict[str, Any]] = []
        page = 1
        while limit is None or len(out) < limit:
            rows = list(self._request("GET", f"/api/runs?page={page}&per_page={RUNS_PER_PAGE}"))
            out += rows
            if len(rows) < RUNS_PER_PAGE:
                break
            page += 1
        return out[:limit]

    def run(self, run_id: str) -> dict[str, Any]:
        return dict(self._request("GET", f"/api/runs/{run_id}"))

    def validate(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The server's check of a spec (nothing queued): its plan, or a ClientError naming the field."""
        return dict(self._request("POST", "/api/validate", spec))

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Queue a run; {"id", "url", ...}."""
        return dict(self._request("POST", "/api/runs", spec))

    def set_cc(self, run_id: str, host: str, args: dict[str, Any], cc: str = "fast") -> dict[str, Any]:
        """Change a running run's algorithm parameters now (e.g. {"alpha": 60})."""
        return dict(self._request("POST", f"/api/runs/{run_id}/cc", {"host": host, "cc": cc, "args": args}))

    def cancel(self, run_id: str) -> dict[str, Any]:
        return dict(self._request("POST", f"/api/runs/{run_id}/cancel"))

    def wait(self, run_id: str, timeout_s: float = 900, poll_s: float = 1.0) -> str:
        """Wait until the run has ended (done, failed, interrupted, cancelled); its status."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = str(self.run(run_id).get("status"))
            if status in ENDED:
                return status
            if time.monotonic() > deadline:
                raise ClientError(f"run {run_id} is still {status} after {timeout_s:g} s")
            time.sleep(poll_s)

    def bundle(self, run_id: str, dest: str | Path) -> Path:
        """The run's bundle (zip with its SHA-256 manifest) saved at `dest`."""
        path = Path(dest)
        path.write_bytes(self._request("GET", f"/api/runs/{run_id}/bundle", raw=True))
        return path

    def results(self, run_id: str, folder: str | Path | None = None) -> results.Run:
        """The finished run's results: its bundle fetched, verified and loaded (fastlab.results.api)."""
        where = Path(folder or tempfile.mkdtemp(prefix="fastlab-client-"))
        where.mkdir(parents=True, exist_ok=True)
        loaded = results.load(self.bundle(run_id, where / f"{run_id}.zip"), extract_to=where / "run")
        if not isinstance(loaded, results.Run):
            raise ClientError(f"run {run_id}: its bundle holds a sweep, not a run")
        return loaded
