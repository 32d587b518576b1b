"""A class in the app's database (DESIGN.md §2: students are people, not addresses): its tables, their
migration on start, and the queries the class pages make. Pure storage: no request, no Flask.

Tables (added beside the run history in the same SQLite file; `migrate` creates what is missing, so an
older history gains them at the next start and keeps its rows):

- `classes` (id, name, join code, created): an instructor's class; students join with its code.
- `students` (id, class, display name, sha-256 of their secret, joined): no password on a lab network;
  the browser keeps `<id>.<secret>` in a cookie, the database only the secret's hash.
- `answers` (student, lab folder, box key, label, prompt, text, edited, updated): a student's answer to
  one box of a lab's handout. `edited` is when the student typed it (their browser's clock, in ms),
  `updated` when the server stored it: a box written offline and synced later keeps its own time, and
  of two versions of one box the later edit wins (`save_answers`).
- `checkpoint_cache` (run, status, result JSON): a finished run's checkpoint results, computed once (a
  finished run's folder no longer changes), for the instructor's view of a class of 30.
- `runs.student`: the student who queued a run (a column added to the history's table).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import math
import re
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

CLASS_ID_RE = re.compile(r"^c[0-9a-f]{10}$")
STUDENT_ID_RE = re.compile(r"^s[0-9a-f]{12}$")
CODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{3,31}$")
ANSWER_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
LAB_RE = re.compile(r"^\d\d-[a-z0-9][a-z0-9-]{0,60}$")  # a lab folder's name (fastlab.labs.kit.FOLDER_RE)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and copied from a projector
CODE_LENGTH = 6
MAX_NAME_CHARS = 40  # a display name
MAX_CLASS_NAME_CHARS = 80
MAX_ANSWER_CHARS = 20_000  # one box: pages of notes, not a file
MAX_PROMPT_CHARS = 2_000
MAX_LABEL_CHARS = 200
MAX_ITEMS = 100  # boxes in one lab's handout (lab 10 has 14)
MAX_CLASSES = 200
MAX_STUDENTS = 500  # per class: §8's classes are 30-200
# a browser's clock may be off; an edit time further ahead than this is taken as the server's now
CLOCK_SLACK_MS = 24 * 3600 * 1000

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS classes (id TEXT PRIMARY KEY, name TEXT NOT NULL, code TEXT NOT NULL UNIQUE,
       created TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS students (id TEXT PRIMARY KEY, class_id TEXT NOT NULL REFERENCES classes(id),
       name TEXT NOT NULL, secret_sha256 TEXT NOT NULL, joined TEXT NOT NULL, UNIQUE (class_id, name))""",
    """CREATE TABLE IF NOT EXISTS answers (student_id TEXT NOT NULL REFERENCES students(id), lab TEXT NOT NULL,
       key TEXT NOT NULL, label TEXT NOT NULL, prompt TEXT NOT NULL, text TEXT NOT NULL, edited INTEGER NOT NULL,
       updated TEXT NOT NULL, PRIMARY KEY (student_id, lab, key))""",
    """CREATE TABLE IF NOT EXISTS checkpoint_cache (run_id TEXT PRIMARY KEY, status TEXT NOT NULL,
       result TEXT NOT NULL, evaluated TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS students_by_class ON students (class_id)",
)


class ClassError(ValueError):
    """A request about a class that cannot be done as asked: `status` is its HTTP status, the message
    one line naming the field."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def migrate(conn: sqlite3.Connection) -> None:
    """Create the class tables and add `runs.student` where missing (idempotent; the runs table is the
    queue's, fastlab.service.store.connect creates it first)."""
    for statement in SCHEMA:
        conn.execute(statement)
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    if have and "student" not in have:
        conn.execute("ALTER TABLE runs ADD COLUMN student TEXT")
    conn.commit()


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _text(field: str, value: Any, most: int, least: int = 1) -> str:
    """A one-line printable text of least..most characters (surrounding spaces dropped), else ClassError."""
    if not isinstance(value, str):
        raise ClassError(f"{field}: expected text, got {type(value).__name__}")
    value = " ".join(value.split())
    if not least <= len(value) <= most:
        raise ClassError(f"{field}: {least} to {most} characters, not {len(value)}")
    if not value.isprintable():
        raise ClassError(f"{field}: printable characters only")
    return value


# --- classes ------------------------------------------------------------------------------------------

def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def create_class(conn: sqlite3.Connection, name: Any, code: Any = None) -> dict[str, Any]:
    """A new class with `name` and a join code (given, or six letters and digits); ClassError 409 for a
    code another class has."""
    name = _text("name", name, MAX_CLASS_NAME_CHARS)
    if code is None or code == "":
        code = new_code()
    elif not isinstance(code, str) or not CODE_RE.match(code):
        raise ClassError("code: 4 to 32 letters, digits or '-', starting with a letter or digit")
    if conn.execute("SELECT COUNT(*) FROM classes").fetchone()[0] >= MAX_CLASSES:
        raise ClassError(f"name: this server already has {MAX_CLASSES} classes", 409)
    if conn.execute("SELECT 1 FROM classes WHERE code = ? COLLATE NOCASE", (code,)).fetchone():
        raise ClassError(f"code: {code!r} is taken by another class: choose another", 409)
    row = {"id": "c" + secrets.token_hex(5), "name": name, "code": code, "created": now()}
    conn.execute("INSERT INTO classes (id, name, code, created) VALUES (:id, :name, :code, :created)", row)
    conn.commit()
    return row


def classes(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT c.*, (SELECT COUNT(*) FROM students s WHERE s.class_id = c.id) AS students "
                        "FROM classes c ORDER BY created DESC").fetchall()
    return [dict(r) for r in rows]


def class_row(conn: sqlite3.Connection, class_id: str) -> dict[str, Any] | None:
    if not CLASS_ID_RE.match(class_id):
        return None
    row = conn.execute("SELECT * FROM classes WHERE id = ?", (class_id,)).fetchone()
    return dict(row) if row else None


# --- students -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Student:
    id: str
    name: str
    class_id: str
    class_name: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "class_id": self.class_id, "class_name": self.class_name}


def join(conn: sqlite3.Connection, code: Any, name: Any) -> tuple[Student, str]:
    """A student joins the class whose code this is with a display name; returns them and the cookie's
    value (`<id>.<secret>`). ClassError 404 for a code no class has, 409 for a name already in it."""
    if not isinstance(code, str) or not CODE_RE.match(code.strip()):
        raise ClassError("code: the class's join code, as the instructor shows it (4 to 32 letters and digits)")
    name = _text("name", name, MAX_NAME_CHARS)
    row = conn.execute("SELECT * FROM classes WHERE code = ? COLLATE NOCASE", (code.strip(),)).fetchone()
    if row is None:
        raise ClassError(f"code: no class has the code {code.strip()!r}: check it with your instructor", 404)
    count = conn.execute("SELECT COUNT(*) FROM students WHERE class_id = ?", (row["id"],)).fetchone()[0]
    if count >= MAX_STUDENTS:
        raise ClassError(f"code: the class already has {MAX_STUDENTS} students", 409)
    taken = "SELECT 1 FROM students WHERE class_id = ? AND name = ? COLLATE NOCASE"
    if conn.execute(taken, (row["id"], name)).fetchone():
        raise ClassError(f"name: someone in this class is already called {name!r}: add an initial", 409)
    student_id, secret = "s" + secrets.token_hex(6), secrets.token_urlsafe(24)
    conn.execute("INSERT INTO students (id, class_id, name, secret_sha256, joined) VALUES (?, ?, ?, ?, ?)",
                 (student_id, row["id"], name, _hash(secret), now()))
    conn.commit()
    return Student(student_id, name, row["id"], row["name"]), f"{student_id}.{secret}"


def student_of_cookie(conn: sqlite3.Connection, cookie: str | None) -> Student | None:
    """The student whose cookie this is (its secret checked against the stored hash), else None."""
    if not cookie or "." not in cookie or len(cookie) > 100:
        return None
    student_id, secret = cookie.split(".", 1)
    if not STUDENT_ID_RE.match(student_id):
        return None
    row = conn.execute("SELECT s.*, c.name AS class_name FROM students s JOIN classes c ON c.id = s.class_id "
                       "WHERE s.id = ?", (student_id,)).fetchone()
    if row is None or not hmac.compare_digest(row["secret_sha256"], _hash(secret)):
        return None
    return Student(row["id"], row["name"], row["class_id"], row["class_name"])


def students(conn: sqlite3.Connection, class_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute("SELECT id, name, joined FROM students WHERE class_id = ? ORDER BY name "
                                          "COLLATE NOCASE", (class_id,))]


def tag_run(conn: sqlite3.Connection, run_id: str, student: Student | None) -> None:
    """The student who queued a run (inside the queue's write transaction; nothing for a run without one)."""
    if student is not None:
        conn.execute("UPDATE runs SET student = ? WHERE id = ?", (student.id, run_id))


def student_names(conn: sqlite3.Connection, run_ids: list[str]) -> dict[str, str]:
    """Run id -> the name of the student who queued it, for the runs that have one."""
    out: dict[str, str] = {}
    for start in range(0, len(run_ids), 500):  # SQLite's bound on parameters
        part = run_ids[start:start + 500]
        marks = ",".join("?" * len(part))
        out |= {r["id"]: r["name"] for r in conn.execute(
            f"SELECT r.id, s.name FROM runs r JOIN students s ON s.id = r.student WHERE r.id IN ({marks})",  # noqa: S608
            part)}
    return out


# --- answers ------------------------------------------------------------------------------------------

def _edited(value: Any, now_ms: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ClassError("items.edited: the time of the edit in ms since 1970, a positive number")
    return int(min(value, now_ms + CLOCK_SLACK_MS)) if value < 1e15 else now_ms


def check_items(lab: Any, items: Any) -> tuple[str, list[dict[str, Any]]]:
    """A lab folder's name and a list of answer boxes ({key, label, prompt, text, edited}), checked."""
    if not isinstance(lab, str) or not LAB_RE.match(lab):
        raise ClassError("lab: a lab folder's name such as 02-fast-equilibrium")
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        raise ClassError(f"items: a list of at most {MAX_ITEMS} answer boxes")
    now_ms, out, keys = int(time.time() * 1000), [], set()
    for n, item in enumerate(items):
        if not isinstance(item, dict) or set(item) - {"key", "label", "prompt", "text", "edited"}:
            raise ClassError(f"items[{n}]: an object with key, label, prompt, text and edited")
        key = item.get("key")
        if not isinstance(key, str) or not ANSWER_KEY_RE.match(key) or key in keys:
            raise ClassError(f"items[{n}].key: a box's key such as q-1 or step-1, once each")
        keys.add(key)
        text = item.get("text")
        if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS:
            raise ClassError(f"items[{n}].text: text of at most {MAX_ANSWER_CHARS:,} characters")
        prompt = item.get("prompt", "")
        if not isinstance(prompt, str):
            raise ClassError(f"items[{n}].prompt: text")
        out.append({"key": key, "label": _text(f"items[{n}].label", item.get("label", key), MAX_LABEL_CHARS),
                    "prompt": " ".join(prompt.split())[:MAX_PROMPT_CHARS], "text": text.replace("\x00", ""),
                    "edited": _edited(item.get("edited"), now_ms)})
    return lab, out


def answers(conn: sqlite3.Connection, student_id: str, lab: str) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute("SELECT key, label, prompt, text, edited, updated FROM answers "
                                          "WHERE student_id = ? AND lab = ? ORDER BY key", (student_id, lab))]


def save_answers(conn: sqlite3.Connection, student: Student, lab: str,
                 items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge a browser's boxes into the stored ones, box by box: the later edit wins (a box typed offline
    on one device does not overwrite what was typed since on another). Returns every stored box."""
    stamp = now()
    for item in items:
        conn.execute("""INSERT INTO answers (student_id, lab, key, label, prompt, text, edited, updated)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (student_id, lab, key) DO UPDATE SET label = excluded.label,
                        prompt = excluded.prompt, text = excluded.text, edited = excluded.edited,
                        updated = excluded.updated WHERE excluded.edited > answers.edited""",
                     (student.id, lab, item["key"], item["label"], item["prompt"], item["text"], item["edited"], stamp))
    conn.commit()
    return answers(conn, student.id, lab)


def class_answers(conn: sqlite3.Connection, class_id: str) -> list[dict[str, Any]]:
    """Every answer of a class's students (non-empty ones), by student and lab."""
    return [dict(r) for r in conn.execute(
        "SELECT a.student_id, s.name AS student, a.lab, a.key, a.label, a.prompt, a.text, a.edited, a.updated "
        "FROM answers a JOIN students s ON s.id = a.student_id WHERE s.class_id = ? AND TRIM(a.text) != '' "
        "ORDER BY a.lab, a.key, s.name COLLATE NOCASE", (class_id,))]


def class_runs(conn: sqlite3.Connection, class_id: str) -> list[dict[str, Any]]:
    """The runs a class's students queued, newest first (the history's columns the class view shows)."""
    return [dict(r) for r in conn.execute(
        "SELECT r.id, r.name, r.status, r.error, r.created, r.started, r.finished, r.lab, r.lab_step, r.lab_short, "
        "r.spec, r.summary, r.student AS student_id, s.name AS student FROM runs r JOIN students s ON s.id = r.student "
        "WHERE s.class_id = ? ORDER BY COALESCE(r.created, r.started) DESC", (class_id,))]


# --- checkpoint results, once per finished run -----------------------------------------------------------

def cached_checkpoints(conn: sqlite3.Connection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(run_ids), 500):
        part = run_ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for r in conn.execute(f"SELECT run_id, result FROM checkpoint_cache WHERE run_id IN ({marks})", part):  # noqa: S608
            out[r["run_id"]] = json.loads(r["result"])
    return out


def cache_checkpoints(conn: sqlite3.Connection, run_id: str, result: dict[str, Any]) -> None:
    conn.execute("INSERT OR REPLACE INTO checkpoint_cache (run_id, status, result, evaluated) VALUES (?, ?, ?, ?)",
                 (run_id, str(result.get("status")), json.dumps(result, default=str), now()))
    conn.commit()
