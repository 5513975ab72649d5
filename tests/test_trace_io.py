"""Trace-file readers and writers (hroof.traces.io): formats, round trips, errors."""

from __future__ import annotations

import gzip
import itertools
import re
import shutil
import subprocess
import zipfile
from importlib.resources import files

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from hroof._base.errors import HroofError, TraceFormatError
from hroof.traces import (
    DEFAULT_CHUNK,
    FORMATS,
    count_accesses,
    detect_format,
    iter_trace,
    textfmt,
    write_din,
    write_npz,
)

CHUNK_SIZES = [1, 7, 1000, DEFAULT_CHUNK]


def read_all(path, format=None, **kw):
    """Concatenate every chunk; check each chunk's dtypes and length on the way."""
    chunk_size = kw.get("chunk_size", DEFAULT_CHUNK)
    chunks = list(iter_trace(path, format, **kw))
    for i, (addr, size, kind) in enumerate(chunks):
        assert addr.dtype == np.uint64 and size.dtype == np.uint32 and kind.dtype == np.uint8
        assert len(addr) == len(size) == len(kind) > 0
        assert len(addr) <= chunk_size
        if i < len(chunks) - 1:
            assert len(addr) == chunk_size  # only the last chunk is short
    if not chunks:
        return np.empty(0, np.uint64), np.empty(0, np.uint32), np.empty(0, np.uint8)
    return tuple(np.concatenate(cols) for cols in zip(*chunks, strict=True))


def random_trace(n, seed, kinds=3):
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    addr[: n // 2] %= 1 << 20  # short and long addresses alike
    size = rng.choice(np.array([1, 2, 4, 8, 16, 64, 2**32 - 1], np.uint32), n)
    kind = rng.integers(0, kinds, n, dtype=np.uint8)
    return addr, size, kind


def split(trace, seed):
    """Cut a trace into uneven chunks (some empty) as a writer might get them."""
    n = len(trace[0])
    cuts = np.sort(np.random.default_rng(seed).integers(0, n + 1, 5))
    bounds = [0, *cuts.tolist(), n]
    return [tuple(a[lo:hi] for a in trace) for lo, hi in itertools.pairwise(bounds)]


def assert_trace_equal(got, want):
    for g, w in zip(got, want, strict=True):
        assert_array_equal(g, w)


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def line_error(path, format=None, **kw):
    with pytest.raises(TraceFormatError) as info:
        read_all(path, format, **kw)
    return str(info.value)


# --------------------------------------------------------------------------
# Format names
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("t.npz", "npz"),
        ("t.din", "din"),
        ("t.dinero", "din"),
        ("T.DIN", "din"),
        ("t.din.gz", "din"),
        ("a.b.lackey", "lackey"),
        ("t.lackey.gz", "lackey"),
        ("t.trace", "lackey"),
        ("t.log", "lackey"),
        ("t.out", "lackey"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(name) == fmt
    assert fmt in FORMATS


@pytest.mark.parametrize("name", ["trace.txt", "trace", "trace.gz", "trace.npy"])
def test_detect_format_unknown(name):
    with pytest.raises(TraceFormatError, match=re.escape(name)) as info:
        detect_format(name)
    assert "npz, din or lackey" in str(info.value)


def test_unknown_format_name(tmp_path):
    path = write_text(tmp_path, "t.din", "0 10\n")
    with pytest.raises(TraceFormatError) as info:
        iter_trace(path, "dinn")
    msg = str(info.value)
    assert msg.startswith("unknown trace format 'dinn'; choose npz, din or lackey")
    assert "did you mean 'din'" in msg
    assert read_all(path, "DIN")[0].tolist() == [0x10]  # format names ignore case


@pytest.mark.parametrize(
    ("kw", "what"),
    [({"chunk_size": 0}, "chunk_size"), ({"access_size": 0}, "access_size")],
)
def test_bad_arguments(tmp_path, kw, what):
    path = write_text(tmp_path, "t.din", "0 10\n")
    with pytest.raises(HroofError, match=what):
        iter_trace(path, **kw)
    with pytest.raises(HroofError, match="access_size"):
        iter_trace(path, access_size=2**32)


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_npz_round_trip(tmp_path, chunk_size):
    trace = random_trace(2500, seed=1)
    path = tmp_path / "t.npz"
    write_npz(path, split(trace, seed=2))
    assert count_accesses(path) == 2500
    assert_trace_equal(read_all(path, chunk_size=chunk_size), trace)


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("name", ["t.din", "t.din.gz"])
def test_din_round_trip(tmp_path, chunk_size, name):
    trace = random_trace(2500, seed=3, kinds=2)
    path = tmp_path / name
    write_din(path, split(trace, seed=4))
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    assert count_accesses(path) is None
    assert_trace_equal(read_all(path, chunk_size=chunk_size), trace)


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 20])
def test_text_blocks_do_not_matter(tmp_path, monkeypatch, block):
    """Lines cut across read blocks (even 1 byte) parse the same."""
    monkeypatch.setattr(textfmt, "_BLOCK_BYTES", block)
    trace = random_trace(300, seed=5, kinds=2)
    path = tmp_path / "t.din"
    write_din(path, trace)
    assert_trace_equal(read_all(path, chunk_size=7), trace)


def test_write_npz_compressed_members_stream(tmp_path):
    """Deflated npz members (np.savez_compressed) stream like stored ones."""
    addr, size, kind = random_trace(3000, seed=6)
    path = tmp_path / "t.npz"
    np.savez_compressed(path, addr=addr, size=size, kind=kind)
    assert_trace_equal(read_all(path, chunk_size=7), (addr, size, kind))


def test_npz_accepts_other_integer_dtypes(tmp_path):
    path = tmp_path / "t.npz"
    np.savez(
        path,
        addr=np.array([1, 2, 3], ">i8"),
        size=np.array([8, 4, 1], np.int16),
        kind=np.array([0, 1, 2], np.int64),
    )
    assert_trace_equal(read_all(path), ([1, 2, 3], [8, 4, 1], [0, 1, 2]))


def test_chunks_are_writable_copies(tmp_path):
    path = tmp_path / "t.npz"
    write_npz(path, random_trace(10, seed=7))
    for chunk in iter_trace(path, chunk_size=4):
        for a in chunk:
            assert a.flags.writeable and a.flags.c_contiguous
        assert chunk.addr is chunk[0]


def test_write_npz_exact_path_and_bare_tuple(tmp_path):
    trace = random_trace(5, seed=8)
    path = tmp_path / "trace.bin"
    write_npz(path, trace)  # one (addr, size, kind) tuple is one chunk
    assert path.exists() and not (tmp_path / "trace.bin.npz").exists()
    assert_trace_equal(read_all(path, "npz"), trace)


def test_write_din_rejects_nt_store_and_removes_file(tmp_path):
    addr, size, kind = random_trace(20, seed=9, kinds=2)
    kind[13] = 2
    path = tmp_path / "t.din"
    with pytest.raises(TraceFormatError) as info:
        write_din(path, [(addr[:10], size[:10], kind[:10]), (addr[10:], size[10:], kind[10:])])
    msg = str(info.value)
    assert "t.din" in msg and "access 13" in msg and "non-temporal" in msg
    assert "cannot express" in msg
    assert not path.exists()


@pytest.mark.parametrize(
    ("chunk", "expect"),
    [
        (([1, 2], [8], [0, 0]), "different lengths: addr 2, size 1, kind 2"),
        (([1.5], [8], [0]), "addr has dtype float64"),
        (([-1], [8], [0]), "addr[0] is -1"),
        (([1, 2], [8, 0], [0, 0]), "size[1] is 0"),
        (([1], [2**32], [0]), "size[0] is 4294967296"),
        (([1, 1], [8, 8], [0, 3]), "kind[1] is 3"),
        (([[1]], [[8]], [[0]]), "must be 1-D"),
        ((1, 2), "must be a tuple (addr, size, kind)"),
    ],
)
def test_write_npz_validates(tmp_path, chunk, expect):
    path = tmp_path / "t.npz"
    with pytest.raises(TraceFormatError) as info:
        write_npz(path, [chunk])
    assert "t.npz" in str(info.value) and expect in str(info.value)
    assert not path.exists()


# --------------------------------------------------------------------------
# din parsing
# --------------------------------------------------------------------------


def test_din_parsing(tmp_path):
    text = (
        "0 1000\n"  # default size
        "1 0x2000 4\n"  # 0x prefix, explicit size
        "\n"  # blank
        "2 400000 4\n"  # instruction fetch: ignored
        "   \t\n"  # blank (whitespace only)
        "  0\t0XABCdef   16  \n"  # tabs, leading and trailing blanks, 0X, mixed case
        "1 ffffffffffffffff 1\r\n"  # CRLF, largest address
        "00 0 8"  # no final newline
    )
    path = write_text(tmp_path, "t.din", text)
    addr, size, kind = read_all(path)
    assert addr.tolist() == [0x1000, 0x2000, 0xABCDEF, 2**64 - 1, 0]
    assert size.tolist() == [8, 4, 16, 1, 8]
    assert kind.tolist() == [0, 1, 0, 1, 0]
    _, size, _ = read_all(path, access_size=4)  # only the sizeless lines change
    assert size.tolist() == [4, 4, 16, 1, 8]


def test_bundled_example():
    path = files("hroof") / "data" / "example.din"
    addr, size, kind = read_all(path)
    # 5-point stencil on the 46 x 46 interior of a 48 x 48 grid: 5 loads + 1 store each
    assert len(addr) == 46 * 46 * 6
    assert (kind == 0).sum() == 5 * (kind == 1).sum()
    assert set(size.tolist()) == {8}
    assert count_accesses(path) is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("4 1000", "unsupported din label 4 (cache flush)"),
        ("3 1000 8", "unsupported din label 3 (escape)"),
        ("7 1000", "unsupported din label 7 (unknown)"),
        ("r 1000", "bad label 'r'"),
        ("-1 1000", "bad label '-1'"),
        ("0", "got 1 field(s)"),
        ("0 1000 8 9", "got 4 field(s)"),
        ("0 12g4", "bad address '12g4'"),
        ("0 0x", "bad address '0x'"),
        ("0 1_000", "bad address '1_000'"),
        ("0 10000000000000000", "bad address"),  # 17 hex digits
        ("0 1000 0", "bad size '0'"),
        ("0 1000 +8", "bad size '+8'"),
        ("0 1000 0x8", "bad size '0x8'"),
        ("0 1000 4294967296", "bad size '4294967296'"),
    ],
)
def test_din_errors(tmp_path, line, reason):
    path = write_text(tmp_path, "bad.din", f"0 10 8\n\n1 20\n{line}\n0 30\n")
    msg = line_error(path)
    assert msg.startswith(f"{path}:4: ")
    assert reason in msg
    assert msg.endswith(repr(line))


def test_din_error_line_number_in_later_block(tmp_path, monkeypatch):
    monkeypatch.setattr(textfmt, "_BLOCK_BYTES", 100)
    lines = [f"{i % 3} {i:x} 8" for i in range(1000)]
    lines[777] = "0 zz 8"
    path = write_text(tmp_path, "t.din", "\n".join(lines) + "\n")
    assert line_error(path) == (
        f"{path}:778: bad address 'zz' (want at most 16 hex digits, 0x optional): '0 zz 8'"
    )


def test_long_line_content_is_truncated(tmp_path):
    line = "0 " + "y" * 500
    msg = line_error(write_text(tmp_path, "t.din", line + "\n"))
    assert ":1: " in msg and repr(line[:80] + "...") in msg and len(msg) < 300


def test_line_without_newline_too_long(tmp_path, monkeypatch):
    monkeypatch.setattr(textfmt, "_BLOCK_BYTES", 16)
    monkeypatch.setattr(textfmt, "_MAX_LINE_BYTES", 64)
    path = write_text(tmp_path, "t.din", "0 10\n1 20\n" + "0" * 200)
    msg = line_error(path)
    assert f"{path}:3: line longer than 64 bytes" in msg


def test_binary_file_as_din(tmp_path):
    path = tmp_path / "t.npz"
    write_npz(path, random_trace(10, seed=10))
    msg = line_error(path, "din")
    assert msg.startswith(f"{path}:1: ") and "PK" in msg


# --------------------------------------------------------------------------
# lackey parsing
# --------------------------------------------------------------------------

LACKEY = """\
==123== Lackey, an example Valgrind tool
==123== Copyright (C) 2002-2017, and GNU GPL'd, by Nicholas Nethercote.
==123== Command: ./a.out
==123==
I  0401ab70,3
 S 1fff000688,8
I  0401b770,1
 L 04228e78,4
 M 0422a000,16
program output, not a record
Is a line starting with I but no space after
 L 00000010,1
==123==
==123== Counted 1 call to main()
"""


def test_lackey_parsing(tmp_path):
    addr, size, kind = read_all(write_text(tmp_path, "t.lackey", LACKEY))
    assert addr.tolist() == [0x1FFF000688, 0x04228E78, 0x0422A000, 0x0422A000, 0x10]
    assert size.tolist() == [8, 4, 16, 16, 1]
    assert kind.tolist() == [1, 0, 0, 1, 0]  # M is a load, then a store


def test_lackey_modify_split_across_chunks(tmp_path):
    path = write_text(tmp_path, "t.out", " M 10,8\n M 20,8\n M 30,8\n")
    chunks = list(iter_trace(path, chunk_size=3))
    assert [c.kind.tolist() for c in chunks] == [[0, 1, 0], [1, 0, 1]]
    assert [c.addr.tolist() for c in chunks] == [[16, 16, 32], [32, 48, 48]]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (" L zzzz,8", "bad address 'zzzz'"),
        (" S 1000", "expected ' S ADDRESS,SIZE'"),
        ("I  0401ab70", "expected 'I  ADDRESS,SIZE'"),
        (" M 10,0", "bad size '0'"),
        (" L 10, 8", "bad size ' 8'"),
        (" L 10 ,8", "bad address '10 '"),
        (" L 10,8,8", "bad size '8,8'"),
        (" L10,8", "expected ' L ADDRESS,SIZE'"),
        (" Lx 10,8", "expected ' L ADDRESS,SIZE'"),
        (" L", "expected ' L ADDRESS,SIZE'"),
        ("I  ,3", "bad address ''"),
    ],
)
def test_lackey_errors(tmp_path, line, reason):
    path = write_text(tmp_path, "bad.lackey", f"==1== hi\n L 10,8\n{line}\n S 20,8\n")
    msg = line_error(path)
    assert msg.startswith(f"{path}:3: ")
    assert reason in msg
    assert msg.endswith(repr(line))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_real_lackey_trace(tmp_path):
    out = tmp_path / "true.lackey"
    subprocess.run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={out}", "/bin/true"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    lines = out.read_text().splitlines()
    loads = sum(line.startswith(" L") for line in lines)
    stores = sum(line.startswith(" S") for line in lines)
    modifies = sum(line.startswith(" M") for line in lines)
    fetches = sum(line.startswith("I ") for line in lines)
    assert fetches > 1000
    addr, _, kind = read_all(out)
    assert len(addr) > 1000
    assert (kind == 0).sum() == loads + modifies
    assert (kind == 1).sum() == stores + modifies
    assert (kind == 2).sum() == 0


# --------------------------------------------------------------------------
# Block parsers against their line-by-line twins
# --------------------------------------------------------------------------

DIN_PIECES = ["0", "1", "2", "3", "00", "x", "10", "0x1f", "0X", "ff", "FFFFFFFFFFFFFFFF",
              "10000000000000000", "4294967295", "4294967296", "1_0", "-1", ""]  # fmt: skip
BAD_RATES = [0.0, 0.01, 0.03, 0.1]  # odd lines per file: from none to many
LACKEY_PIECES = ["I ", " L", " S", " M", " X", "==1==", "I", " "]
LACKEY_BODY = ["", " ", "  ", "\t", "10", "0x10", "ffffffffffffffff", "zz", ",", ",8", ",0", "8",
               ",4294967296", " ,", ", ", "1"]  # fmt: skip


def naive_read(lines, parse_line):
    """Parse line by line; return (addr, size, kind) or the 1-based number of the first bad line."""
    out = []
    for lineno, line in enumerate(lines, 1):
        try:
            got = parse_line(line)
        except textfmt._BadLine:
            return lineno
        if got is None:
            continue
        out.extend([got] if isinstance(got, tuple) else got)
    return tuple(np.array([r[j] for r in out], dtype=np.uint64) for j in (1, 2, 0))


def fast_read(path):
    try:
        addr, size, kind = read_all(path, chunk_size=5)
    except TraceFormatError as e:
        return int(re.match(rf"{re.escape(str(path))}:(\d+): ", str(e)).group(1))
    return addr, size.astype(np.uint64), kind.astype(np.uint64)


@pytest.mark.parametrize("seed", range(40))
def test_din_block_parser_matches_line_parser(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(textfmt, "_BLOCK_BYTES", 37)
    rng = np.random.default_rng(seed)
    bad_rate = BAD_RATES[seed % len(BAD_RATES)]
    lines = []
    for _ in range(60):
        if rng.random() >= bad_rate:
            fields = [str(rng.integers(0, 3)), f"{rng.integers(0, 2**40):x}"]
            if rng.random() < 0.5:
                fields.append(str(rng.integers(1, 100)))
        else:
            fields = list(rng.choice(DIN_PIECES, rng.integers(0, 5)))
        seps = rng.choice([" ", "  ", "\t", " \r"], len(fields) + 1)
        lines.append("".join(s + f for s, f in zip(seps, fields, strict=False)).encode())
    path = write_text(tmp_path, "t.din", b"\n".join(lines) + b"\n")
    want = naive_read(lines, textfmt._parse_din_line)
    got = fast_read(path)
    if isinstance(want, int):
        assert got == want
    else:
        assert_trace_equal(got, want)


@pytest.mark.parametrize("seed", range(40))
def test_lackey_block_parser_matches_line_parser(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(textfmt, "_BLOCK_BYTES", 41)
    rng = np.random.default_rng(seed)
    bad_rate = BAD_RATES[seed % len(BAD_RATES)]
    lines = []
    for _ in range(60):
        if rng.random() >= bad_rate:
            head = rng.choice(["I ", " L", " S", " M", "==7== x"])
            lines.append(f"{head} {rng.integers(0, 2**40):08x},{rng.integers(1, 64)}".encode())
        else:
            body = "".join(rng.choice(LACKEY_BODY, rng.integers(0, 5)))
            lines.append((rng.choice(LACKEY_PIECES) + body).encode())
    path = write_text(tmp_path, "t.lackey", b"\n".join(lines) + b"\n")
    want = naive_read(lines, textfmt._parse_lackey_line)
    got = fast_read(path)
    if isinstance(want, int):
        assert got == want
    else:
        assert_trace_equal(got, want)


# --------------------------------------------------------------------------
# npz errors
# --------------------------------------------------------------------------


def npz(tmp_path, **arrays):
    path = tmp_path / "bad.npz"
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


GOOD = {"addr": np.arange(4, dtype=np.uint64), "size": np.full(4, 8, np.uint32),
        "kind": np.zeros(4, np.uint8)}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"kind": None}, "missing array(s) kind; an npz trace needs addr, size and kind"),
        ({"addr": None, "size": None}, "missing array(s) addr, size"),
        ({"size": np.full(3, 8, np.uint32)}, "different lengths: addr 4, size 3, kind 4"),
        ({"addr": np.arange(4.0)}, "array 'addr' has dtype float64"),
        ({"kind": np.zeros(4, bool)}, "array 'kind' has dtype bool"),
        ({"addr": np.arange(4).reshape(2, 2)}, "array 'addr' must be 1-D, got shape (2, 2)"),
        ({"addr": np.array(["a"] * 4, dtype=object)}, "array 'addr' has dtype object"),
    ],
)
def test_npz_layout_errors(tmp_path, change, expect):
    arrays = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = npz(tmp_path, **arrays)
    with pytest.raises(TraceFormatError) as info:
        iter_trace(path)  # raised at the call, before iterating
    assert str(path) in str(info.value) and expect in str(info.value)
    with pytest.raises(TraceFormatError):
        count_accesses(path)


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"addr": np.array([0, 1, -5, 2])}, "addr[2] is -5; addresses must be non-negative"),
        ({"size": np.array([8, 8, 8, 0], np.uint32)}, "size[3] is 0"),
        ({"size": np.array([8, -8, 8, 8])}, "size[1] is -8"),
        ({"size": np.array([8, 2**32, 8, 8])}, "size[1] is 4294967296"),
        ({"kind": np.array([0, 1, 2, 3], np.uint8)}, "kind[3] is 3; kinds must be 0 (load)"),
        ({"kind": np.array([0, -1, 0, 0])}, "kind[1] is -1"),
    ],
)
def test_npz_value_errors(tmp_path, change, expect):
    path = npz(tmp_path, **{**GOOD, **change})
    with pytest.raises(TraceFormatError) as info:
        read_all(path, chunk_size=1)  # the index is in the whole file, not the chunk
    assert str(path) in str(info.value) and expect in str(info.value)


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"not a zip file at all", "is not a valid npz file"),
        (gzip.compress(b"0 10\n", mtime=0), "gzip-compressed"),
    ],
)
def test_npz_not_a_zip(tmp_path, content, expect):
    path = write_text(tmp_path, "bad.npz", content)
    with pytest.raises(TraceFormatError) as info:
        iter_trace(path)
    assert str(path) in str(info.value) and expect in str(info.value)


def test_npz_member_not_npy(tmp_path):
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("addr", "size", "kind"):
            zf.writestr(f"{name}.npy", b"garbage")
    with pytest.raises(TraceFormatError, match=r"array 'addr' is not a valid \.npy array"):
        iter_trace(path)


def test_npz_truncated_member(tmp_path):
    path = npz(tmp_path, **GOOD)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["size.npy"] = members["size.npy"][:-5]
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(TraceFormatError, match="array 'size' is truncated"):
        read_all(path)


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["t.npz", "t.din", "t.lackey"])
def test_missing_file_and_directory(tmp_path, name):
    path = tmp_path / name
    with pytest.raises(TraceFormatError, match=f"^trace file not found: {re.escape(str(path))}$"):
        iter_trace(path)
    with pytest.raises(TraceFormatError, match="trace file not found"):
        count_accesses(path)
    path.mkdir()
    with pytest.raises(TraceFormatError, match=f"{re.escape(str(path))} is a directory"):
        iter_trace(path)


@pytest.mark.parametrize("name", ["t.din", "t.lackey"])
def test_empty_file_yields_nothing(tmp_path, name):
    path = write_text(tmp_path, name, b"")
    assert list(iter_trace(path)) == []
    assert count_accesses(path) == 0


def test_empty_npz_file_is_an_error(tmp_path):
    """A 0-byte .npz (an interrupted write) is not silently an empty trace."""
    path = write_text(tmp_path, "t.npz", b"")
    for fn in (iter_trace, count_accesses):
        with pytest.raises(TraceFormatError, match=r"t\.npz is empty \(0 bytes\), not an npz"):
            fn(path)


def test_empty_trace_arrays(tmp_path):
    path = tmp_path / "t.npz"
    write_npz(path, [])
    assert list(iter_trace(path)) == []
    assert count_accesses(path) == 0
    path = tmp_path / "t.din"
    write_din(path, [])
    assert path.read_bytes() == b""
    path = write_text(tmp_path, "t.lackey", "==1== nothing here\n\n")
    assert list(iter_trace(path)) == []


def test_gzip_text_detected_by_content(tmp_path):
    """A gzip file is read as such whatever its name; a corrupt one is an error."""
    path = write_text(tmp_path, "t.lackey", gzip.compress(LACKEY.encode()))
    assert len(read_all(path)[0]) == 5
    path = write_text(tmp_path, "t.din.gz", gzip.compress(b"0 10\n1 20\n" * 1000)[:-30])
    with pytest.raises(TraceFormatError, match=f"cannot read trace file {re.escape(str(path))}"):
        read_all(path)
