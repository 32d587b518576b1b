"""fastlab.base.documents, the one bounded reader of YAML and JSON, and fastlab.base.names, the one check
of names that become paths (issue 47): each bound on hand-made hostile texts, each refusal one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fastlab.base.documents import MAX_INT_DIGITS, DocumentError, read_json, read_yaml
from fastlab.base.names import NameRefused, check_name, child
from fastlab.define.schema import SpecError, parse_override


def anchors(levels: int) -> str:
    items = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    items += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "{" + ", ".join(items) + "}"


@pytest.mark.parametrize("text, words", [
    ("a: 1\na: 2\n", "the key 'a' is given twice (line 2)"),
    ("{a: {b: 1, b: 1}}", "the key 'b' is given twice"),
    ("a: " + "9" * 5000, f"an integer of 5,000 digits (at most {MAX_INT_DIGITS})"),
    ("a: -0x" + "f" * 100, "an integer of 101 digits"),
    ("a: " + "[" * 40 + "]" * 40, "nested deeper than 32 levels"),
    ("a: " + "[" * 50_000 + "]" * 50_000, "nested deeper than 32 levels"),
    ("a: &a [*a]", "an alias refers to the node that contains it"),
    ("a: [1, 2", "not valid YAML"),
    ("x" * 101, "longer than 100 characters"),
])
def test_hostile_yaml_is_one_line(text: str, words: str) -> None:
    with pytest.raises(DocumentError) as err:
        read_yaml(text, max_chars=100 if text.startswith("xxx") else 1_000_000)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_an_alias_bomb_costs_its_size_not_its_expansion() -> None:
    """10^9 values expanded in 400 characters: refused by shape in milliseconds."""
    start = time.monotonic()
    with pytest.raises(DocumentError, match="more than 100,000 values"):
        read_yaml(anchors(9), max_chars=10_000)
    assert time.monotonic() - start < 0.5


def test_merge_keys_and_anchors_within_bounds_still_read() -> None:
    data = read_yaml("base: &b {rate: 1, delay: 2}\nlink: {<<: *b, rate: 3}\nx: &v [1, 2]\ny: *v\n", max_chars=1000)
    assert data["link"] == {"rate": 3, "delay": 2} and data["y"] == [1, 2]


def test_set_with_an_alias_bomb_is_refused_at_once() -> None:
    """`fastlab run --set` took 8.1 s on a value of 10^7 values; the --set bound is 10,000 values."""
    start = time.monotonic()
    with pytest.raises(SpecError, match=r"--set description: more than 10,000 values"):
        parse_override("description=" + anchors(7))
    assert time.monotonic() - start < 0.5
    with pytest.raises(SpecError, match="an integer of 5,000 digits"):
        parse_override("seed=" + "1" * 5000)
    with pytest.raises(SpecError, match="given twice"):
        parse_override("links.bottleneck={rate_mbps: 1, rate_mbps: 2}")


@pytest.mark.parametrize("text, words", [
    ('{"a": 1, "a": 2}', "the key 'a' is given twice"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('[Infinity]', "Infinity is not a JSON number"),
    ('{"a": ' + "1" * 5000 + "}", "an integer of 5,000 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),
    ("[" * 40 + "]" * 40, "nested deeper than 32 levels"),
    ('{"a": ', "not valid JSON at line 1"),
    (b"\xff\xfe", "not UTF-8 text"),
])
def test_hostile_json_is_one_line(text: str | bytes, words: str) -> None:
    with pytest.raises(DocumentError) as err:
        read_json(text, max_chars=1_000_000)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_json_within_bounds_reads() -> None:
    assert read_json(b'{"a": [1, 2.5, "x", null, true]}', max_chars=100) == {"a": [1, 2.5, "x", None, True]}


def test_a_run_record_written_before_it_was_typed_reads_nan_as_null_and_nothing_else_does() -> None:
    """json.dumps wrote a figure of no samples as NaN into summary.json; the record reads it as null."""
    assert read_json('{"a": [NaN, Infinity, -Infinity, 1.5]}', max_chars=100, non_finite_as_null=True) == \
        {"a": [None, None, None, 1.5]}
    with pytest.raises(DocumentError, match="given twice"):
        read_json('{"a": NaN, "a": 1}', max_chars=100, non_finite_as_null=True)


@pytest.mark.parametrize("name", ["p00-r0", "run-20261128-abc", "a.b_c-1", "X" * 128])
def test_plain_names_pass(name: str) -> None:
    assert check_name(name, "id") == name


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "/etc", "a/b", ".hidden", "a\nb", "a\x00", "X" * 129,
                                  "a b", 7, None, ["a"]])
def test_names_that_could_be_paths_are_refused(name: object) -> None:
    with pytest.raises(NameRefused) as err:
        check_name(name, "point id")
    assert str(err.value).startswith("point id: ") and "\n" not in str(err.value)


def test_child_refuses_links_out_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "link").symlink_to(tmp_path)
    assert child(tmp_path / "in", "ok", "id") == tmp_path / "in" / "ok"
    with pytest.raises(NameRefused, match="symbolic link"):
        child(tmp_path / "in", "link", "id")


def test_read_file_takes_regular_files_only_and_bounds_them(tmp_path: Path) -> None:
    """A lab.json linked to /dev/zero made `lab check --run` read for ever (issue 47): a document is read
    from a regular file only, refused from its type before a byte is read (a FIFO without a writer does not
    block), and at most max_bytes of it."""
    import os

    from fastlab.base.documents import read_file, read_json_file

    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    assert read_json_file(good, max_chars=100) == {"a": 1}
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.json")
    for name, words in (("zero.json", "not a regular file (a character device)"), ("fifo.json", "a FIFO"),
                        (".", "a folder")):
        t0 = time.monotonic()
        with pytest.raises(DocumentError, match=words.replace("(", r"\(").replace(")", r"\)")):
            read_file(tmp_path / name, max_bytes=100)
        assert time.monotonic() - t0 < 1
    with pytest.raises(DocumentError, match="larger than 7 bytes"):
        read_file(good, max_bytes=7)
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing", max_bytes=7)
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(DocumentError, match="not UTF-8"):
        read_json_file(tmp_path / "latin1.json", max_chars=100)


def test_exponent_numbers_are_floats_and_quoted_ones_texts() -> None:
    """`--set rate_mbps=1e-3` is a number (YAML 1.2, JSON), not the text PyYAML's YAML 1.1 made of it, which
    the spec's strict numbers refuse; quoted it stays a text; a number too large for a float is inf."""
    assert read_yaml("a: 1e-3\nb: -5E9\nc: '1e-3'\nd: 1.5e3\ne: 1e999\nf: 12", max_chars=100) == \
        {"a": 0.001, "b": -5e9, "c": "1e-3", "d": 1500.0, "e": float("inf"), "f": 12}
