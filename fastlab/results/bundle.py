"""Result bundles: a run or sweep directory as one zip with a SHA-256 manifest; verify; extract.

`export(directory, zip_path)` stores every regular file of a run directory (or of a sweep
directory with all its points) under one top-level folder named after it, a generated
`REPRODUCE.md` (what ran, where, and the exact commands to verify, replay and rerun it), and
`MANIFEST.sha256` in `sha256sum` format (`<hex>  <path>` per line) covering all of them.
`verify(zip_path)` returns the problems it finds: files missing, added or altered against the
manifest, unsafe member names, an unreadable archive; an empty list means the bundle is intact.
`extract(zip_path, dest)` verifies first and writes only regular files inside `dest`.
`fidelity_lines(zip_path)` reads the bundled run's fidelity verdict (each point's, of a sweep)
for `fastlab bundle verify`; REPRODUCE.md states it too. These touch only the paths they are
given. Replaying a bundle is `fastlab.experiment.replay`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from fastlab.base import record
from fastlab.base.documents import DocumentError, one_line, read_json_file
from fastlab.base.record import Summary
from fastlab.base.rundir import (
    POINT_FILE,
    POINTS,
    RECORD_MAX_CHARS,
    REPORT,
    SWEEP_STATE,
    SWEEP_STATE_MAX_CHARS,
    RunFolder,
    finished_points,
    summary_in,
)
from fastlab.measure import fidelity
from fastlab.results import fidelity_view, report

MANIFEST = "MANIFEST.sha256"
REPRODUCE = "REPRODUCE.md"
MAX_EXTRACT_BYTES = 4 * 1024**3  # far above any run's traces; refuses zip bombs
MAX_MANIFEST_BYTES = 16 * 1024**2  # ~200,000 lines of 80 bytes: far above any bundle's file count
# Deflate of real traces (CSV, JSON) packs 3-20x; zeros pack ~1000x. Above this ratio a large member
# is a bomb, refused before a byte of it is inflated.
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 1024**2  # small members may pack as they like
CHUNK = 1024**2
_LINE_RE = re.compile(r"^([0-9a-f]{64})  (.+)$")


class BundleError(ValueError):
    """A directory that cannot be bundled, or a bundle that cannot be used; one-line message."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _shown(name: str) -> str:
    """A member's name as a problem names it: as it is when it is a plain one, else quoted, on one line and
    at most ~100 characters (a name may hold anything a zip can: line breaks, ': ')."""
    if normal_name(name) and name.isprintable() and ": " not in name and len(name) <= 100:
        return name
    return repr(one_line(name[:100]) + ("..." if len(name) > 100 else ""))


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member may not be read or unpacked, judged from its header alone (pure)."""
    file_type = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix type recorded (plain writestr)
    if file_type == stat.S_IFLNK:
        return f"{info.filename}: a symbolic link (unzip would recreate it)"
    if file_type and file_type != stat.S_IFREG:
        return f"{info.filename}: not a regular file"
    if info.file_size > MAX_EXTRACT_BYTES:
        return f"{info.filename}: unpacks to {info.file_size:,} bytes, more than {MAX_EXTRACT_BYTES:,}"
    if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return (f"{info.filename}: packed {info.file_size // max(info.compress_size, 1):,} to 1 "
                f"(more than {MAX_RATIO}: a zip bomb)")
    return None


def _stream(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """A member's bytes in chunks, never more than its header declares (a lying header stops)."""
    total = 0
    with zf.open(info) as member:
        while chunk := member.read(CHUNK):
            total += len(chunk)
            if total > info.file_size:
                raise BundleError(f"{info.filename}: longer than its header says")
            yield chunk


def _stream_sha256(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str:
    digest = hashlib.sha256()
    for chunk in _stream(zf, info):
        digest.update(chunk)
    return digest.hexdigest()


def kind_of(directory: Path) -> str:
    """"sweep" (has sweep.json) or "run" (has spec.yaml and summary.json); else BundleError."""
    if (directory / SWEEP_STATE).is_file():
        return "sweep"
    if RunFolder(directory).is_run():
        return "run"
    raise BundleError(f"{directory}: not a run directory (spec.yaml, summary.json) nor a sweep directory "
                      f"({SWEEP_STATE})")


def _run_facts(run_dir: Path) -> list[str]:
    """Markdown lines: what the run was, where it ran, what it measured."""
    folder = RunFolder(run_dir)
    spec = folder.spec()
    env = folder.environment(missing_ok=True)
    summary = folder.summary() if folder.is_run() else Summary()
    run, tools = env.run, env.tools
    lines = [f"- experiment `{spec.get('name')}`: topology `{spec.get('topology')}` "
             f"{json.dumps(spec.get('topology_args', {}))}, {spec.get('duration_s')} s, seed {spec.get('seed')}"]
    for flow in spec.get("flows", []):
        lines.append(f"- flow {flow.get('src')} -> {flow.get('dst')} x{flow.get('count', 1)}, `{flow.get('cc')}` "
                     f"{json.dumps(flow.get('cc_args') or {})}")
    for link_id, link in (spec.get("links") or {}).items():
        lines.append(f"- link `{link_id}` set to {json.dumps(link)}")
    lines += ["", f"Ran as `{run.prefix}` on host `{run.host}`, started {run.started}, "
              f"kernel `{env.kernel}`, fastlab `{tools.get('fastlab', '?')}`, Python {tools.get('python', '?')},"
              f" Mininet {tools.get('mininet', '?')}, {tools.get('iperf3', 'iperf3 ?')}.", "",
              "| job | backend | why |", "|---|---|---|"]
    lines += [f"| {job} | {c.backend} | {c.why} |" for job, c in env.backends.items()]
    lines += [f"| shaping of `{a.link}` | {a.backend} | {a.why} |" for a in env.shaping]
    lines += [f"| CC build `{name}` | sha256 `{digest}` | |" for name, digest in env.congestion_control.builds.items()]
    lines += ["", "| result | value |", "|---|---|"]
    for f in summary.flows:
        lines.append(f"| {f.id} {f.src}->{f.dst} {f.cc} | {f.throughput_mbps} Mb/s, "
                     f"min RTT {f.min_rtt_ms} ms, mean RTT {f.mean_rtt_ms} ms, {f.retransmits} retransmits |")
    for link in summary.links:
        lines.append(f"| link {link.id} | utilization {link.utilization}, mean backlog "
                     f"{link.mean_backlog_pkts} pkts, drops {link.drops} (loss model {link.loss_drops}) |")
    lines.append(f"| emulation | {one_line(fidelity.headline(summary.fidelity)).removeprefix('fidelity: ')} |")
    return lines


def reproduce_md(directory: Path, bundle_name: str) -> str:
    """REPRODUCE.md for a run or sweep directory (read from its files; writes nothing); BundleError in one
    line when its records cannot be read (the bounded reader refused them, or they lack what fastlab
    writes)."""
    try:
        return _reproduce_md(directory, bundle_name)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # DocumentError is a ValueError
        why = str(exc) if isinstance(exc, DocumentError | BundleError) else f"{exc.__class__.__name__}: {exc}"
        raise BundleError(f"{directory}: its records cannot be read ({one_line(why)[:200]})") from None


def _reproduce_md(directory: Path, bundle_name: str) -> str:
    kind, top = kind_of(directory), directory.name
    verify_cmds = ["```sh", f"fastlab bundle verify {bundle_name}        # every byte against {MANIFEST}"]
    if kind == "run":
        lines = [f"# Reproducing fastlab run `{top}`", "",
                 "This bundle is one fastlab run: the resolved spec (`spec.yaml`), the environment and the shaping "
                 "actually applied (`environment.json`), traces (`flows.csv`, `links.csv`, `cc_events.csv`, "
                 "`hop_flows.csv`, `loss_drops_*.txt`), `summary.json` and `report.html`.", "",
                 "## What ran, where", ""]
        lines += _run_facts(directory)
        lines += ["", "## Verify and replay", ""] + verify_cmds + [
            f"sudo fastlab bundle replay {bundle_name}   # rerun the spec here, compare summaries, verdict", "```",
            "", "## Rerun by hand", "", "```sh", f"unzip {bundle_name}",
            f"sudo fastlab run {top}/spec.yaml --out rerun-{top}", "```"]
    else:
        state_path = directory / SWEEP_STATE
        state = read_json_file(state_path, max_chars=SWEEP_STATE_MAX_CHARS) if state_path.is_file() else {}
        done = finished_points(directory)
        lines = [f"# Reproducing fastlab sweep `{top}`", "",
                 f"This bundle is a parameter sweep: `sweep.yaml` (the spec with its `sweep:` section), `{SWEEP_STATE}`"
                 " (the points), one run directory per finished point under `points/`, `aggregate.csv` (one row per "
                 "point and repetition), `aggregate_mean.csv` (mean/std/min/max per parameter combination) and "
                 "`sweep.html`.", "", "## Points", "",
                 f"{len(done)} of {len(state.get('points', []))} points finished; "
                 f"parameters {', '.join(f'`{k}`' for k in state.get('parameters', {}))}, "
                 f"{state.get('repetitions')} repetition(s) (repetition r runs with seed + r).", "",
                 "| point | parameters | repetition | seed |", "|---|---|---|---|"]
        lines += [f"| {p['id']} | {json.dumps(p['params'])} | {p['rep']} | {p['seed']} |"
                  for p in state.get("points", []) if p["id"] in done]
        if done:
            lines += ["", f"## The first point, `{done[0]}`", ""] + _run_facts(directory / "points" / done[0])
        lines += ["", "## Verify and replay", ""] + verify_cmds + [
            f"sudo fastlab bundle replay {bundle_name} --point {done[0] if done else 'ID'}   # one point",
            f"sudo fastlab bundle replay {bundle_name}   # every finished point", "```", "",
            "## Rerun by hand", "", "```sh", f"unzip {bundle_name}",
            f"sudo fastlab sweep run {top}/sweep.yaml --out rerun-{top}", "```"]
    return "\n".join(lines + ["", "Replay compares each summary metric with the tolerance stated (with its reason) in "
                               "`fastlab/experiment/replay.py` (`TOLERANCES`) and says `consistent` or `differs`.", ""])


def _member_files(directory: Path, exclude: set[Path]) -> list[Path]:
    """The regular files to bundle: no symlinks, no hidden scratch files (atomic-write temporaries, a
    point being received), and of a sweep only the points that finished."""
    excluded = {p.resolve() for p in exclude}
    files = [p for p in directory.rglob("*") if p.is_file() and not p.is_symlink() and p.resolve() not in excluded
             and not any(part.startswith(".") for part in p.relative_to(directory).parts)]
    if kind_of(directory) == "sweep":

        done = set(finished_points(directory))
        files = [p for p in files if (rel := p.relative_to(directory).parts)[0] != "points" or rel[1] in done]
    return sorted(files)


def export(directory: Path | str, zip_path: Path | str, extra: dict[str, bytes] | None = None) -> Path:
    """Write a run or sweep directory as a zip with REPRODUCE.md and a SHA-256 manifest; returns the zip's path.

    `extra` adds files that are not in the directory (a student's answers.md beside a lab step run),
    by plain name in the top folder, covered by the manifest like the rest; a run file of the same
    name gives way to it."""
    directory, zip_path = Path(directory), Path(zip_path)
    if not directory.is_dir():
        raise BundleError(f"{directory}: not a directory")
    extra = extra or {}
    for name in extra:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", name) or name in (MANIFEST, REPRODUCE):
            raise BundleError(f"{name!r}: an added file is a plain name other than {MANIFEST} and {REPRODUCE}")
    readme = reproduce_md(directory, zip_path.name)
    top = directory.name
    lines = []
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = zip_path.with_name(zip_path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        members = [(p.relative_to(directory).as_posix(), p) for p in _member_files(directory, {zip_path, tmp})]
        entries: list[tuple[str, Path | None]] = [(r, p) for r, p in members if r not in (MANIFEST, REPRODUCE, *extra)]
        entries += _report_script(directory, {r for r, _ in entries})
        entries += [(name, None) for name in sorted(extra)] + [(REPRODUCE, None)]
        for rel, path in entries:
            data = path.read_bytes() if path is not None else extra[rel] if rel in extra else readme.encode()
            lines.append(f"{_sha256(data)}  {rel}")
            zf.writestr(f"{top}/{rel}", data)
        zf.writestr(f"{top}/{MANIFEST}", "\n".join(lines) + "\n")
    tmp.replace(zip_path)
    return zip_path


def _report_script(directory: Path, members: set[str]) -> list[tuple[str, Path | None]]:
    """The plotly.js a run folder's report.html loads from the results folder above it (fastlab.results.report
    keeps one per results folder), added to the run's bundle beside the report so the bundle opens on its own;
    [] for a sweep (its folder holds its copy) or a report that needs none from outside."""
    if REPORT not in members:
        return []
    text = (directory / REPORT).read_text(errors="replace")
    names = set(re.findall(r"plotly-[0-9][0-9A-Za-z.+-]{0,39}\.min\.js", text))
    added: list[tuple[str, Path | None]] = []
    for name in sorted(names - members):
        found = next((p for p in (directory.parent / name, directory.parent.parent / name) if p.is_file()), None)
        if found is None and name == report.PLOTLY_FILE:
            found = report.PLOTLY_SOURCE
        if found is not None:
            added.append((name, found))
    return added


def normal_name(name: str) -> bool:
    """A member name (or a manifest's path) in normal form (pure): relative, '/'-separated parts none of
    which is empty, '.' or '..', and no backslash or NUL. `run1//x`, `run1/./spec.yaml` and `run1/x/` name
    a file that a second, different name reaches too (`run1/x`, `run1/spec.yaml`): which of the two a
    reader opened was not the one verify certified (issue 47). Every name is judged in this form before
    anything is hashed, extracted or read."""
    return bool(name) and "\\" not in name and "\x00" not in name and \
        all(part not in ("", ".", "..") for part in name.split("/"))


def _namespace_problems(names: list[str]) -> list[str]:
    """What is wrong with a bundle's member names as a set (pure): a name not in normal form, a name given
    twice (a zip may hold two members of one name: a dict of them kept the last), a name that is both a
    file and the folder of another (`spec.yaml` and `spec.yaml/x`)."""
    problems = [f"unsafe member name {_shown(n)}: not a normal member name (an empty, '.' or '..' part, a "
                "leading '/', a backslash or a NUL)" for n in names if not normal_name(n)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"{_shown(name)}: the bundle holds a member of this name twice")
        seen.add(name)
    folders = {"/".join(n.split("/")[:i]) for n in seen for i in range(1, n.count("/") + 1)}
    problems += [f"{_shown(n)}: both a file and the folder of another member" for n in sorted(seen & folders)]
    return problems


def verify(zip_path: Path | str) -> list[str]:
    """Problems found in a bundle (empty = intact). Members are hashed as streams, so memory stays
    small whatever they hold; sizes, packing ratios and file types are judged from the headers
    before anything is inflated."""
    problems: list[str] = []
    try:
        zf = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        return [f"cannot open bundle: {exc}"]
    with zf:
        files = [i for i in zf.infolist() if not i.is_dir()]
        # the namespace first: a folder entry is a name too (`run1/x/` beside a file `run1/x`)
        problems += _namespace_problems([i.filename for i in files] +
                                        [i.filename.removesuffix("/") for i in zf.infolist() if i.is_dir()])
        infos = {i.filename: i for i in files}
        names = list(infos)
        refused = {name: why for name, info in infos.items() if (why := _member_problem(info))}
        problems += [refused[name] for name in sorted(refused)]
        if sum(i.file_size for i in infos.values()) > MAX_EXTRACT_BYTES:
            problems.append(f"unpacks to more than {MAX_EXTRACT_BYTES:,} bytes")
        manifests = [n for n in names if n.endswith("/" + MANIFEST) and n.count("/") == 1]
        if len(manifests) != 1:
            return problems + [f"expected one {MANIFEST} in the bundle's top folder, found {len(manifests)}"]
        top = manifests[0].split("/")[0]
        if infos[manifests[0]].file_size > MAX_MANIFEST_BYTES or manifests[0] in refused:
            return problems + [f"{MANIFEST}: larger than {MAX_MANIFEST_BYTES:,} bytes or refused"]
        try:
            manifest = b"".join(_stream(zf, infos[manifests[0]])).decode("utf-8")
        except (zipfile.BadZipFile, UnicodeDecodeError, OSError, EOFError, zlib.error, BundleError) as exc:
            return problems + [f"cannot read {MANIFEST}: {exc}"]
        expected: dict[str, str] = {}
        for n, line in enumerate(manifest.splitlines(), 1):
            m = _LINE_RE.match(line)
            if not m:
                problems.append(f"{MANIFEST} line {n} is malformed")
                continue
            if not normal_name(m.group(2)) or m.group(2) in expected:
                problems.append(f"{MANIFEST} line {n}: {_shown(m.group(2))} is not a normal member name or "
                                "is listed twice")
                continue
            expected[m.group(2)] = m.group(1)
        present = {n[len(top) + 1:] for n in names if n.startswith(top + "/") and n != manifests[0]}
        for name in names:
            if not name.startswith(top + "/"):
                problems.append(f"{_shown(name)}: outside the bundle's folder {top}/")
        for rel in sorted(set(expected) - present):
            problems.append(f"{_shown(rel)}: missing (listed in the manifest)")
        for rel in sorted(present - set(expected)):
            problems.append(f"{_shown(rel)}: not listed in the manifest")
        for rel in sorted(set(expected) & present):
            if f"{top}/{rel}" in refused:
                continue
            try:
                digest = _stream_sha256(zf, infos[f"{top}/{rel}"])
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error) as exc:  # CRC/inflate errors
                problems.append(f"{_shown(rel)}: unreadable ({one_line(str(exc))[:200]})")
                continue
            if digest != expected[rel]:
                problems.append(f"{_shown(rel)}: SHA-256 mismatch (altered)")
    return problems


def _member_bytes(zf: zipfile.ZipFile, name: str) -> bytes:
    """A record member of a bundle (its summary.json), read as a stream no longer than its header says and
    at most RECORD_MAX_CHARS; BundleError for a member that is not a plain file or is larger, KeyError if
    absent. The typed record then bounds its depth and numbers."""
    info = zf.getinfo(name)
    why = _member_problem(info) or (f"larger than {RECORD_MAX_CHARS:,} bytes" if info.file_size > RECORD_MAX_CHARS
                                    else None)
    if why:
        raise BundleError(f"{name}: {why}")
    return b"".join(_stream(zf, info))


def fidelity_lines(zip_path: Path | str) -> list[str]:
    """The bundled run's fidelity headline; of a sweep bundle, how many finished points were
    faithful and the first reason of each one that was not. Reads summary.json from the zip
    (verify first: an altered summary says what it likes); BundleError if it cannot."""
    try:
        with zipfile.ZipFile(zip_path) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
            top = names[0].split("/")[0] if names else ""
            if f"{top}/{SWEEP_STATE}" not in names:
                return [one_line(fidelity.headline(summary_in(zf, top, _member_bytes).fidelity))]
            points = sorted(n.split("/")[2] for n in names
                            if n.count("/") == 3 and n.startswith(f"{top}/{POINTS}/") and n.endswith(f"/{POINT_FILE}"))
            summaries = {p: summary_in(zf, f"{top}/{POINTS}/{p}", _member_bytes) for p in points}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
        why = str(exc) if isinstance(exc, DocumentError | BundleError | record.RecordError) else exc.__class__.__name__
        raise BundleError(f"{zip_path}: cannot read the run's summary.json: {one_line(why)[:200]}") from None
    states = {p: fidelity_view.state(s.fidelity) for p, s in summaries.items()}
    bad = [p for p, st in states.items() if st == "unfaithful"]
    unknown = sum(st == "unassessed" for st in states.values())
    if unknown == len(states):
        return [f"fidelity: not assessed ({len(states)} point(s), made before fidelity verdicts)"]
    counts = [f"{len(states) - len(bad) - unknown} of {len(states)} points faithful"]
    counts += [f"{len(bad)} NOT FAITHFUL"] if bad else []
    counts += [f"{unknown} not assessed"] if unknown else []
    return [f"fidelity: {', '.join(counts)}"] + [
        f"  {p}: NOT FAITHFUL — {one_line(str(fidelity_view.first_reason(summaries[p].fidelity)))}" for p in bad]


def extract(zip_path: Path | str, dest: Path | str, *, bundle_files: bool = True) -> Path:
    """Verify, then write the bundle's files into `dest`/<top folder>; returns that folder.

    Refuses a bundle that fails verification, symlink or non-regular members, and more than
    MAX_EXTRACT_BYTES; `dest` must not exist or be empty. `bundle_files=False` leaves out the
    manifest and REPRODUCE.md, giving back the directory exactly as it was exported.
    """
    problems = verify(zip_path)
    if problems:
        raise BundleError(f"{zip_path}: fails verification ({len(problems)} problem(s)): {problems[0]}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise BundleError(f"{dest}: exists and is not empty")
    with zipfile.ZipFile(zip_path) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        top = infos[0].filename.split("/")[0]
        root = (dest / top).resolve()
        made_dest = not dest.exists()
        try:
            for info in infos:
                rel = info.filename[len(top) + 1:]
                if not bundle_files and rel in (MANIFEST, REPRODUCE):
                    continue
                target = (root / rel).resolve()
                if not target.is_relative_to(root):  # verify() already refuses these; belt and braces
                    raise BundleError(f"{zip_path}: member {info.filename!r} points outside the bundle")
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    for chunk in _stream(zf, info):
                        out.write(chunk)
        except (OSError, BundleError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
            shutil.rmtree(root, ignore_errors=True)  # nothing half-written is left behind
            if made_dest:
                shutil.rmtree(dest, ignore_errors=True)
            raise BundleError(f"{zip_path}: cannot unpack into {dest}: {exc}") from None
    return root
