"""The layout of fastlab's result folders: the one writer and reader of run folders (`RunFolder`, and
`RunReader`, a run folder read once) and the names of the files in run and sweep folders (issue 13).

A run folder holds spec.yaml (the spec as run; a link's mahimahi trace beside it,
`trace_<link>_<direction>.txt`), environment.json (where and how it ran: the plan's decisions, tools,
sysctls), flows.csv, links.csv, cc_events.csv (fastlab's algorithms' events, when any ran),
rtt_samples.csv (clamped flows' per-second RTT statistics), hop_flows.csv (each flow's own queueing at each
emulated link, cumulative), summary.json (written when the run
completed) and report.html. summary.json and environment.json are the typed run record
(fastlab.base.record: `Summary`, `Environment`, migrated from older versions on read); no other module
opens them. The engine writes a folder with `RunFolder.write`; the labs (StepRun), results (Run), replay,
bundles, sweeps and the web app read it through `RunReader`/`RunFolder`, which also read a CSV stored
gzipped (`flows.csv.gz`, as the labs' recorded runs are).

It also owns a run folder's life: its name (`RunFolder.named`), the check that it can be written
before a run builds anything (`room`), its creation (`open` does all three for the engine), the web
app's partial traces (`partial_writer` appends them while the run goes, `partial` reads them back) and
its finishing (`finish`: the files, then the report, then read permission; a folder whose writing
failed is renamed `.incomplete`). No other module names these files: tests/unit/test_rundir.py checks.

A sweep folder holds `sweep.json` (its state), `sweep.yaml` and `points/<point>/`, each point an
ordinary run folder plus `point.json`, written last; a point counts as finished when that and the
run's `summary.json` are there. Both the sweep runner and the bundle exporter read it from here.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import functools
import json
import os
import shutil
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastlab.base import record
from fastlab.base.documents import DocumentError, read_file, read_yaml_file
from fastlab.base.record import Environment, Summary

if TYPE_CHECKING:
    import pandas as pd

SPEC = "spec.yaml"
ENVIRONMENT = "environment.json"
FLOWS = "flows.csv"
LINKS = "links.csv"
EVENTS = "cc_events.csv"
RTT_SAMPLES = "rtt_samples.csv"
HOP_FLOWS = "hop_flows.csv"  # each flow's frames at each emulated link: their queueing (linkemu's flowacct.h)
REPORT = "report.html"
SUMMARY = "summary.json"  # a run folder's summary, written when the run completed
TOPOLOGY_COPY = "topology.py"  # a run's topology file (a spec's `topology: {file: ...}`), copied beside spec.yaml
PARTIAL = "partial.jsonl"  # the web app's live samples of a run, appended while it goes (kept if it is cut)
INCOMPLETE = ".incomplete"  # the suffix of a run folder whose files could not all be written
REPORT_BYTES = 6 * 1024**2  # report.html (~1 MB) and, in a folder of its own, plotly.js (4.6 MB)
ROW_BYTES = 400  # a sample in flows/links.csv and the web app's partial.jsonl, generously
HOP_ROW_BYTES = 80  # a row of hop_flows.csv ("12.345678,show-floor,forward,f10,123456,1234.567,12.345")
SWEEP_STATE = "sweep.json"  # a sweep folder's state
SWEEP_STATE_MAX_CHARS = 64 * 1024 * 1024  # sweep.json: 10,000 points of a few hundred bytes each, with room
POINT_FILE = "point.json"  # a sweep point's record, written last
POINTS = "points"  # a sweep folder's point run folders
# What a run folder's records are read up to (fastlab.base.documents: a regular file, its depth and size
# bounded): the largest in the repository are ~60 kB (lab 03's environment.json, 64 flows), and a spec is
# at most fastlab.define.schema.MAX_SPEC_CHARS.
RECORD_MAX_CHARS = record.MAX_RECORD_CHARS
SPEC_MAX_CHARS = 1_000_000


DROPS_LOG_PREFIX = "loss_drops_"


def drops_log_name(link: str) -> str:
    """A link's drop log (linkemu --drops-log: the packet index of every drop, both directions)."""
    return f"{DROPS_LOG_PREFIX}{link}.txt"


def trace_name(link: str, direction: str) -> str:
    """A link direction's mahimahi trace as copied into its run folder: spec.yaml names the copy (relative to
    itself), so a bundle carries it and a replay runs it."""
    return f"trace_{link}_{direction}.txt"


def is_finished(point_dir: Path) -> bool:
    """A point is finished when its run directory is complete and point.json (written last) is there."""
    return (point_dir / POINT_FILE).is_file() and (point_dir / SUMMARY).is_file()


def finished_points(sweep_dir: Path) -> list[str]:
    """Names of a sweep folder's finished points, sorted."""
    points = sweep_dir / POINTS
    return sorted(p.name for p in points.iterdir() if is_finished(p)) if points.is_dir() else []


def summary_in(zf: zipfile.ZipFile, folder: str, read_member: Callable[[zipfile.ZipFile, str], bytes]) -> Summary:
    """The summary.json of the run folder `folder` inside a bundle's zip (member `<folder>/summary.json`),
    read without unpacking the bundle: `read_member` (the bundle's bounded member reader) gives its bytes,
    read as the typed record. KeyError when the zip has none; RecordError (one line naming the member and
    the field) for one that is not a run record."""
    name = f"{folder}/{SUMMARY}"
    return record.read_summary(read_member(zf, name), name)


def expected_bytes(sample_hz: float, duration_s: float, flows: int, links: int) -> int:
    """What a run's folder will take, generously (pure): its traces at sample_hz plus the report; each flow's
    figures at every emulated link direction (hop_flows.csv, the emulators' stats at sample_hz too) at most."""
    rows = sample_hz * duration_s * (flows + 2 * links)
    hop_rows = sample_hz * duration_s * flows * 2 * links
    return int(REPORT_BYTES + rows * ROW_BYTES + hop_rows * HOP_ROW_BYTES)


class RunFolderError(OSError):
    """A run folder that cannot be created or written, in one line."""


PARTIAL_FLUSH_S = 0.5


class PartialWriter:
    """Appends samples to a run's partial.jsonl, flushed at least every PARTIAL_FLUSH_S (from any thread)."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._fh = path.open("a", encoding="utf-8")
        self._flushed = time.monotonic()

    def write(self, sample: dict[str, Any]) -> None:
        line = json.dumps(sample, default=str)
        with self._lock:
            if self._fh.closed:
                return
            self._fh.write(line + "\n")
            if time.monotonic() - self._flushed > PARTIAL_FLUSH_S:
                self._fh.flush()
                self._flushed = time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class RunFolder:
    """One run's folder: where each of its files is, reading them, and writing them all at the end of
    a run. Reading a file that is not there raises FileNotFoundError naming it."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    @classmethod
    def named(cls, name: str, prefix: str, out: Path | None = None, root: Path | None = None) -> RunFolder:
        """A new run's folder: `out` when given, else `<root>/<local time>-<name>-<prefix>` (root: the
        results folder, fastlab.base.paths.results_root())."""
        if out is not None:
            return cls(out)
        if root is None:
            from fastlab.base import paths

            root = paths.results_root()
        return cls(root / f"{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{name}-{prefix}")

    @classmethod
    def open(cls, name: str, prefix: str, out: Path | None, need_bytes: int) -> RunFolder:
        """A new run's folder (`named`), created once it is known that `need_bytes` of results fit there
        (`room`); RunFolderError says in one line why it cannot be, before the run builds anything."""
        folder = cls.named(name, prefix, out)
        why = folder.room(need_bytes)
        if why:
            raise RunFolderError(why)
        folder.create()
        return folder

    def room(self, need_bytes: int) -> str | None:
        """Why the folder cannot be written (read-only, not a folder, not enough free space), or None.
        Checked on the nearest existing ancestor before a run builds anything."""
        directory = self.directory
        probe = directory
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            return f"cannot write the results in {directory}: {probe} is not a folder"
        if not os.access(probe, os.W_OK | os.X_OK):
            return f"cannot write the results in {directory}: {probe} is not writable (read-only file system?)"
        try:
            free = shutil.disk_usage(probe).free
        except OSError as exc:
            return f"cannot write the results in {directory}: {exc.strerror}"
        if free < need_bytes:
            return (f"not enough free space for the results in {probe}: {free / 1e6:.1f} MB free, the run needs "
                    f"about {need_bytes / 1e6:.1f} MB (its traces at sample_hz and the report)")
        return None

    def create(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunFolderError(f"cannot create the results folder {self.directory}: {exc.strerror}") from None

    def copy_in(self, source: Path, name: str) -> Path:
        """A file the run reads (a link's trace) copied into the folder as `name`."""
        try:
            return Path(shutil.copyfile(source, self.directory / name))
        except OSError as exc:
            raise RunFolderError(f"cannot copy {source} into {self.directory}: {exc.strerror}") from None

    def finish(self, report: Callable[[], str], **files: Any) -> None:
        """The end of a run: its files (`write`), then its report (drawn by `report()` after them, so a
        report that fails loses no data), then read permission for everyone. When a file cannot be
        written (e.g. the disk filled up during the run) the folder is renamed `<name>.incomplete` and
        RunFolderError says so."""
        try:
            self.write(**files)
            self.write_report(report())
        except OSError as exc:
            incomplete = self.directory.with_name(self.directory.name + INCOMPLETE)
            with contextlib.suppress(OSError):
                self.directory.rename(incomplete)
            raise RunFolderError(f"cannot write the results in {self.directory}: {exc.strerror}; what was "
                                 f"written is in {incomplete}") from None
        os.chmod(self.directory, 0o755)

    def partial_writer(self) -> PartialWriter:
        """The writer of the web app's live samples of this run (partial.jsonl, appended; the folder exists)."""
        return PartialWriter(self.directory / PARTIAL)

    def has_partial(self) -> bool:
        return (self.directory / PARTIAL).is_file()

    def partial(self, limit: int) -> Iterator[dict[str, Any]]:
        """The samples of partial.jsonl, at most `limit`, one at a time (the file stays open while the
        iterator is used); a cut last line (a killed run's) is skipped. FileNotFoundError without one."""
        with (self.directory / PARTIAL).open(encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh):
                if n >= limit:
                    break
                try:
                    sample = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # the last line of a killed run may be cut
                if isinstance(sample, dict):
                    yield sample

    def path(self, name: str) -> Path:
        """The file `name`, or its gzipped copy; FileNotFoundError if neither is there."""
        for candidate in (self.directory / name, self.directory / f"{name}.gz"):
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"{self.directory.name}: the run has no {name}")

    def has(self, name: str) -> bool:
        try:
            self.path(name)
        except FileNotFoundError:
            return False
        return True

    def is_run(self) -> bool:
        """A finished run's folder: its spec and summary are there."""
        return self.has(SPEC) and self.has(SUMMARY)

    # The records are read with the one bounded reader (fastlab.base.documents): a folder from a bundle or
    # another machine may hold anything; DocumentError (a ValueError, one line) for what it cannot take.
    def spec(self) -> dict[str, Any]:
        """spec.yaml as plain data ({} for an empty file)."""
        return read_yaml_file(self.path(SPEC), max_chars=SPEC_MAX_CHARS) or {}

    def _record_text(self, name: str) -> bytes:
        """A record file's bytes through the bounded reader: a regular file (a FIFO or a device is refused
        before a byte is read), at most the bytes fastlab.base.record reads (4 per character);
        RecordError in one line naming the folder and the file for anything else."""
        try:
            return read_file(self.path(name), max_bytes=4 * record.MAX_RECORD_CHARS)
        except DocumentError as exc:
            raise record.RecordError(f"{self.directory.name}/{name}: {exc}") from None

    def summary(self) -> Summary:
        """summary.json as the run record (migrated from its version); RecordError (a ValueError) in one line
        for a file that is not one, FileNotFoundError without it."""
        return record.read_summary(self._record_text(SUMMARY), f"{self.directory.name}/{SUMMARY}")

    def environment(self, missing_ok: bool = False) -> Environment:
        """environment.json as the run record; with `missing_ok`, an empty one for a run made before it existed."""
        if missing_ok and not self.has(ENVIRONMENT):
            return Environment()
        return record.read_environment(self._record_text(ENVIRONMENT), f"{self.directory.name}/{ENVIRONMENT}")

    def record_files(self) -> dict[str, bytes]:
        """The run's spec.yaml and summary.json as an export without the traces carries them (file name ->
        bytes; the web app's class bundle): the spec as its file holds it (bounded), the summary as the
        record reads it, written in its current version. A file missing, or one that cannot be read as what
        it is, is left out."""
        out: dict[str, bytes] = {}
        with contextlib.suppress(OSError, ValueError):  # DocumentError and RecordError are ValueErrors
            out[SPEC] = read_file(self.path(SPEC), max_bytes=4 * SPEC_MAX_CHARS)
        with contextlib.suppress(OSError, ValueError):
            out[SUMMARY] = record.to_json(self.summary()).encode()
        return out

    def csv(self, name: str) -> pd.DataFrame:
        import pandas as pd

        return pd.read_csv(self.path(name))

    def flows(self) -> pd.DataFrame:
        return self.csv(FLOWS)

    def links(self) -> pd.DataFrame:
        return self.csv(LINKS)

    def events(self) -> pd.DataFrame:
        return self.csv(EVENTS)

    def rtt_samples(self) -> pd.DataFrame:
        """Per second and clamped flow: the count, mean and minimum of the RTT sample of every ACK."""
        return self.csv(RTT_SAMPLES)

    def hop_flows(self) -> pd.DataFrame | None:
        """Per emulated link, direction, flow and sample: its frames so far, their mean queueing and the least
        (fastlab.measure.accounting.resolve_hop_flows); None for a run made before they were kept, or
        with no emulated link."""
        return self.csv(HOP_FLOWS) if self.has(HOP_FLOWS) else None

    def write(self, *, spec_yaml: str, environment: Environment, summary: Summary,
              flows: pd.DataFrame | None = None, links: pd.DataFrame | None = None,
              events: pd.DataFrame | None = None, rtt_samples: Iterable[dict[str, object]] = (),
              rtt_columns: Iterable[str] = (), hop_flows: pd.DataFrame | None = None) -> None:
        """Write a run's files but the report (the folder exists). summary.json goes after the traces, so
        a folder with a summary holds the whole run. Empty events or RTT samples write no file."""
        d = self.directory
        (d / SPEC).write_text(spec_yaml)
        (d / ENVIRONMENT).write_text(record.to_json(environment))
        if flows is not None:
            flows.to_csv(d / FLOWS, index=False)
        if links is not None:
            links.to_csv(d / LINKS, index=False)
        samples = list(rtt_samples)
        if samples:
            with (d / RTT_SAMPLES).open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rtt_columns))
                writer.writeheader()
                writer.writerows(samples)
        if events is not None and not events.empty:
            events.to_csv(d / EVENTS, index=False)
        if hop_flows is not None and not hop_flows.empty:
            hop_flows.to_csv(d / HOP_FLOWS, index=False)
        (d / SUMMARY).write_text(record.to_json(summary))

    def write_recording(self, source: RunFolder, traces: dict[str, pd.DataFrame]) -> None:
        """This folder (it exists) as a recording of the run `source` (a lab's, fastlab.labs.record): its spec,
        summary and environment as they are, and `traces` (file name -> table) gzipped, as RunFolder reads
        them back."""
        import gzip

        for name in (SPEC, SUMMARY, ENVIRONMENT):
            if (source.directory / name).is_file():
                shutil.copy(source.directory / name, self.directory / name)
        for name, frame in traces.items():
            with gzip.open(self.directory / f"{name}.gz", "wt", compresslevel=9) as handle:
                frame.to_csv(handle, index=False)

    def write_summary(self, summary: Summary) -> None:
        """summary.json alone (a stand-in engine's, bench/server.py: the web app reads no other file)."""
        (self.directory / SUMMARY).write_text(record.to_json(summary))

    def replace_summary(self, summary: Summary) -> None:
        """summary.json of a finished run rewritten (a verdict judged again by a newer check): written
        beside it and renamed over it, so a reader never sees half of it."""
        target = self.path(SUMMARY)
        scratch = target.with_name(f".{target.name}.new")
        scratch.write_text(record.to_json(summary))
        scratch.replace(target)

    def replace_flows(self, flows: pd.DataFrame) -> None:
        """flows.csv of a finished run rewritten (its delay accounting computed again, with its summary), as
        replace_summary writes: beside it and renamed over it; a gzipped copy goes (it would be read first)."""
        target = self.directory / FLOWS
        scratch = target.with_name(f".{target.name}.new")
        flows.to_csv(scratch, index=False)
        scratch.replace(target)
        (self.directory / f"{FLOWS}.gz").unlink(missing_ok=True)

    def write_report(self, html: str) -> None:
        """report.html, last: drawn from the files `write` wrote, so a failure to draw it loses no data."""
        (self.directory / REPORT).write_text(html)


class RunReader:
    """A run folder read once: its spec (plain data, as run), its record (`summary`, `environment`:
    fastlab.base.record) and its traces, each read when first asked for and kept (a caller may replace one
    in memory). The one reader of run folders: the labs' StepRun and the results API's Run are this with
    their own manners -- what a missing file raises (`missing`), whether a run without environment.json
    reads as an empty one (`environment_optional`), how a trace table is dressed (`dress`)."""

    environment_optional = False

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.folder = RunFolder(self.directory)

    def missing(self, exc: FileNotFoundError) -> Exception:
        """What a missing file raises (this reader: the FileNotFoundError naming it)."""
        return exc

    def dress(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A trace table as this reader gives it (this reader: as read)."""
        return frame

    def _read(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except FileNotFoundError as exc:
            raise self.missing(exc) from None

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """spec.yaml, the spec as run, as plain data (fastlab.define.schema.parse_spec types it)."""
        return dict(self._read(self.folder.spec))

    @functools.cached_property
    def summary(self) -> Summary:
        return self._read(self.folder.summary)  # type: ignore[no-any-return]

    @functools.cached_property
    def environment(self) -> Environment:
        return self._read(lambda: self.folder.environment(missing_ok=self.environment_optional))  # type: ignore[no-any-return]

    @functools.cached_property
    def flows(self) -> pd.DataFrame:
        """Per flow and sample: t (s since the flows started), bytes_acked, cwnd_pkts, srtt_ms, ..."""
        return self.dress(self._read(self.folder.flows))

    @functools.cached_property
    def links(self) -> pd.DataFrame:
        """Per emulated link, direction and sample: backlog_pkts, tx_bytes, drops, ..."""
        return self.dress(self._read(self.folder.links))

    @functools.cached_property
    def cc_events(self) -> pd.DataFrame:
        """fastlab's algorithms' events (FAST's updates, cc_set changes)."""
        return self.dress(self._read(self.folder.events))

    @functools.cached_property
    def rtt_samples(self) -> pd.DataFrame:
        """Per second and clamped flow: the count, mean and minimum of the RTT sample of every ACK."""
        return self.dress(self._read(self.folder.rtt_samples))
