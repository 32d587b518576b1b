"""Refusals in words for students: the spec's one-line errors (`path: what pydantic or a check said`)
as the form shows them beside the field -- the field's name in words and what is wrong in plain
English, never a regular expression or a dotted spec path (those stay in the API's `error` for the
command line and for a researcher's "details").

Pure functions of the message text, so every case is tested on strings (tests/unit/test_words.py).
"""

from __future__ import annotations

import re

# Units of the spec's field-name suffixes, as a student reads them.
UNITS = {"s": "s", "ms": "ms", "us": "µs", "mbps": "Mb/s", "bps": "bit/s", "pkts": "packets", "bdp": "× BDP",
         "hz": "per second", "pct": "%", "bytes": "bytes"}
# What each pattern-checked field accepts, in words (the patterns are spec.py's).
PATTERN_WORDS = {
    "name": "use letters, digits, '.', '_' or '-', starting with a letter or digit (at most 64 characters)",
    "period": "write rtt, 2rtt, or a number with us or ms (e.g. 20ms)",
    "mode": "choose floor or carry",
}
# A spec path inside a check's message ("flows[0].start_s (3) must be before ..."): the spec's list and
# mapping fields, with what follows them.
PATH = re.compile(r"\b(?:flows|links|topology_args|cc_changes|reroutes|controller|sweep)"
                  r"(?:\[\d+\]|\.[A-Za-z0-9_][\w-]*)+")
# The spec's top-level fields a check's message may name beside the field it refuses ("is not before
# duration_s (20 s)"), as a student reads them.
TOP_FIELD_WORDS = {"duration_s": "the run's duration", "sample_hz": "the samples per second"}
TOP_FIELDS = re.compile(r"\b(?:duration_s|sample_hz)\b")
OUT_OF_RANGE = re.compile(r"^(\w+)=(.+?) is out of range \[([^,\]]+), ([^\]]+)\](?: (.+))?$")


# A list's items and a mapping's entries by what a student calls them.
ITEMS = {"flows": "flow", "cc_changes": "scheduled change", "reroutes": "reroute"}


def field_words(path: str) -> str:
    """`links.bottleneck.loss.rate` -> "link bottleneck, loss rate"; `flows[0].cc_args.alpha` -> "flow 1,
    alpha"; `duration_s` -> "duration (s)"."""
    parts: list[str] = []
    for seg in re.findall(r"[A-Za-z0-9_-]+|\[\d+\]", path):
        index = seg[1:-1] if seg.startswith("[") else seg if seg.isdigit() else None
        if index is not None:
            if parts:
                parts[-1] = f"{ITEMS.get(parts[-1], parts[-1])} {int(index) + 1}"
            continue
        if seg in ("cc_args", "args", "topology_args", "forward", "policy"):
            continue
        if seg in ITEMS:  # its index follows
            parts.append(seg)
            continue
        if parts and parts[-1] == "links":
            parts[-1] = f"link {seg}"
            continue
        name, _, unit = seg.rpartition("_")
        words = f"{name.replace('_', ' ')} ({UNITS[unit]})" if name and unit in UNITS else seg.replace("_", " ")
        parts.append(words)
    return ", ".join(p.replace("_", " ") for p in _join_loss(parts)) or path


def _join_loss(parts: list[str]) -> list[str]:
    """"loss", "rate" -> "loss rate": a sub-object's name reads as an adjective of its field."""
    out: list[str] = []
    for part in parts:
        if out and out[-1] in ("loss", "delay", "rate", "buffer", "queue") and " " not in part:
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


def what_is_wrong(path: str, message: str) -> str:
    """pydantic's and the checks' phrasing for one field, in plain words (no pattern, no spec path)."""
    last = re.findall(r"[A-Za-z_][\w-]*", path)[-1] if path else ""
    rules: list[tuple[str, str]] = [
        (r"^Input should be less than or equal to (\S+)$", r"must be at most \1"),
        (r"^Input should be greater than or equal to (\S+)$", r"must be at least \1"),
        (r"^Input should be greater than (\S+)$", r"must be more than \1"),
        (r"^Input should be less than (\S+)$", r"must be less than \1"),
        (r"^Input should be a finite number$", "must be an ordinary number (not NaN or infinity)"),
        (r"^Input should be a valid integer.*$", "must be a whole number"),
        (r"^Input should be a valid (number|float).*$", "must be a number"),
        (r"^Input should be a valid boolean.*$", "must be yes or no"),
        (r"^Input should be a valid (string|dictionary|list|array).*$",
         r"has the wrong kind of value (a \1 is needed)"),
        (r"^String should have at least 1 character$", "must not be empty"),
        (r"^String should have at least (\d+) characters$", r"needs at least \1 characters"),
        (r"^String should have at most (\d+) characters$", r"can be at most \1 characters long"),
        (r"^Input tag '(.*)' found using '(\w+)' does not match any of the expected tags: (.+)$",
         r"\2 must be one of \3 (got '\1')"),
        (r"^required field is missing$", "is required"),
        (r"^unknown field \(misspelled\?\)$", "is not a setting fastlab knows (misspelled?)"),
        (r"^Input should be (.+)$", r"must be \1"),
    ]
    if m := re.match(r"^List should have at least (\d+) items? after validation, not \d+$", message):
        item = ITEMS.get(last, "entry")  # "flows: List should have at least 1 item ..." (issue 50)
        return f"needs at least {m.group(1)} {item}{'s' if m.group(1) != '1' else ''}: add one"
    if message.startswith("String should match pattern"):
        return PATTERN_WORDS.get(last, "contains characters that are not allowed here")
    if m := OUT_OF_RANGE.match(message):
        unit = f" {UNITS.get(m.group(5), m.group(5))}" if m.group(5) else ""
        return f"must be between {m.group(3)} and {m.group(4)}{unit} (got {m.group(2)})"
    for pattern, words in rules:
        if re.match(pattern, message):
            return re.sub(pattern, words, message)
    if " is not of the form " in message:  # a CC parameter's pattern
        return PATTERN_WORDS.get(message.split("=", 1)[0], "is not written in a form fastlab reads")
    return fields_in_words(message)


def fields_in_words(text: str) -> str:
    """Every spec path and top-level field a message names, in words."""
    return TOP_FIELDS.sub(lambda t: TOP_FIELD_WORDS[t.group(0)], PATH.sub(lambda p: field_words(p.group(0)), text))


def plain(error: str) -> tuple[str, str]:
    """One-line refusal -> (the field's spec path, or "" when none is named; the words a student reads:
    the field in words and what is wrong). A message with several fields (`a: x; b: y`) is read by its
    first."""
    first = error.split("; ", 1)[0]
    if point := re.match(r"^([A-Za-z_][\w.\[\]-]*)=([^:]{1,80}): (.+)$", first, re.S):  # a sweep's point
        path, words = plain(point.group(3))  # says the value when it names the field
        return (path, words) if path else (point.group(1), f"{field_words(point.group(1))} = {point.group(2)}: {words}")
    if m := OUT_OF_RANGE.match(first):  # a CC parameter on its own (live control)
        return m.group(1), f"{field_words(m.group(1))}: {what_is_wrong(m.group(1), first)}"
    m = re.match(r"^([A-Za-z_][\w.\[\]-]*): (.*)$", first, re.S)
    if not m:
        return "", fields_in_words(first)
    path, message = m.groups()
    # a nested refusal ("flows[0].cc_args: alpha=0 is out of range ..." or "param: x: y") names its own part
    inner = re.match(r"^([a-z_]\w*(?:\[\d+\])?(?:\.[\w-]+(?:\[\d+\])?)*): (.*)$", message, re.S)
    if inner:
        path, message = f"{path}.{inner.group(1)}", inner.group(2)
    elif m := OUT_OF_RANGE.match(message):  # a CC parameter: "alpha=0 is out of range [1, 10000] packets"
        path = f"{path}.{m.group(1)}"
    return path, f"{field_words(path)}: {what_is_wrong(path, message)}"
