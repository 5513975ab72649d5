"""Numba parsers of a block of whole text lines (din and lackey) into access arrays.

One pass over the bytes, line by line, writing straight into preallocated
``addr`` (uint64), ``size`` (uint32) and ``kind`` (uint8) arrays. Each returns
``(accesses written, index of the first malformed line or -1)``; on a bad
line the caller re-parses that line with the plain-Python line parser of
:mod:`hroof.traces.textfmt`, which names what is wrong (those line parsers are
also these kernels' twins in the tests). The rules are the line parsers':

- whitespace is what :meth:`bytes.split` splits at (space, \\t, \\n, \\v, \\f, \\r);
- an address is at most 16 hex digits, ``0x``/``0X`` optional (a bare ``0x``
  is not a prefix);
- a size is at most 10 decimal digits, 1 to 2**32-1.

The block must end with a newline (the reader carries a partial last line over
to the next block). Imported only when a text trace is read: ``hroof --help``
never loads Numba.
"""

from __future__ import annotations

import numpy as np

from hroof._base.jit import JIT, njit
from hroof._base.kinds import LOAD, STORE

_MAX_SIZE = (1 << 32) - 1


@njit(**JIT)
def _space(c):
    return c == 32 or (c >= 9 and c <= 13)


@njit(**JIT)
def _hex(buf, a, b):
    """Parse ``buf[a:b]`` as an address; ``(value, ok)``."""
    if b - a > 2 and buf[a] == 48 and (buf[a + 1] | 32) == 120:
        a += 2
    if b - a > 16:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(a, b):
        c = buf[i]
        if c >= 48 and c <= 57:
            d = c - 48
        else:
            c |= 32
            if c >= 97 and c <= 102:
                d = c - 87
            else:
                return np.uint64(0), False
        v = v * np.uint64(16) + np.uint64(d)
    return v, True


@njit(**JIT)
def _dec(buf, a, b, max_digits):
    """Parse ``buf[a:b]`` as a decimal of at most ``max_digits`` digits; ``(value, ok)``."""
    if b - a > max_digits:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(a, b):
        c = buf[i]
        if c < 48 or c > 57:
            return np.uint64(0), False
        v = v * np.uint64(10) + np.uint64(c - 48)
    return v, True


@njit(**JIT)
def din_block(buf, access_size, addr, size, kind):
    """Parse din lines (``LABEL ADDRESS [SIZE]``); ``addr`` etc. hold one access a line.

    Label 0 is a read, 1 a write, 2 an instruction fetch (checked, then dropped);
    a blank line is skipped.
    """
    n = buf.shape[0]
    j = 0
    line = 0
    p = 0
    while p < n:
        # up to three tokens of the line
        t0a = t0b = t1a = t1b = t2a = t2b = 0
        ntok = 0
        q = p
        while True:
            while buf[q] != 10 and _space(buf[q]):
                q += 1
            if buf[q] == 10:
                break
            a = q
            while not _space(buf[q]):
                q += 1
            if ntok == 0:
                t0a, t0b = a, q
            elif ntok == 1:
                t1a, t1b = a, q
            elif ntok == 2:
                t2a, t2b = a, q
            ntok += 1
        if ntok != 0:
            if ntok == 1 or ntok > 3:
                return j, line
            label, ok = _dec(buf, t0a, t0b, 9)
            if not ok or label > 2:
                return j, line
            a_val, ok = _hex(buf, t1a, t1b)
            if not ok:
                return j, line
            s_val = np.uint64(access_size)
            if ntok == 3:
                s_val, ok = _dec(buf, t2a, t2b, 10)
                if not ok or s_val == 0 or s_val > _MAX_SIZE:
                    return j, line
            if label < 2:
                addr[j] = a_val
                size[j] = np.uint32(s_val)
                kind[j] = np.uint8(label)
                j += 1
        p = q + 1
        line += 1
    return j, -1


@njit(**JIT)
def lackey_block(buf, addr, size, kind):
    """Parse valgrind lackey lines; ``addr`` etc. hold two accesses a line (an M is a
    load, then a store).

    A record is ``I``/`` L``/`` S``/`` M``, whitespace, ``ADDRESS,SIZE``, optional
    whitespace; other lines (valgrind's own output, the program's) are skipped;
    instruction fetches are checked, then dropped.
    """
    n = buf.shape[0]
    j = 0
    line = 0
    p = 0
    while p < n:
        c0 = buf[p]
        q = p
        if c0 == 10:
            p += 1
            line += 1
            continue
        c1 = buf[p + 1]
        fetch = c0 == 73 and c1 == 32  # "I "
        if fetch or (c0 == 32 and (c1 == 76 or c1 == 83 or c1 == 77)):
            # tokens at whitespace and commas: exactly three, exactly one comma
            ntok = 0
            commas = 0
            t0a = t0b = t1a = t1b = t2a = t2b = 0
            while True:
                c = buf[q]
                while c != 10 and (c == 44 or _space(c)):
                    commas += c == 44
                    q += 1
                    c = buf[q]
                if c == 10:
                    break
                a = q
                while not (c == 44 or _space(c)):
                    q += 1
                    c = buf[q]
                if ntok == 0:
                    t0a, t0b = a, q
                elif ntok == 1:
                    t1a, t1b = a, q
                elif ntok == 2:
                    t2a, t2b = a, q
                ntok += 1
            if ntok != 3 or commas != 1 or t0b - t0a != 1 or buf[t1b] != 44 or t2a != t1b + 1:
                return j, line
            a_val, ok = _hex(buf, t1a, t1b)
            if not ok:
                return j, line
            s_val, ok = _dec(buf, t2a, t2b, 10)
            if not ok or s_val == 0 or s_val > _MAX_SIZE:
                return j, line
            if not fetch:
                if c1 == 77:  # M: a load, then a store
                    addr[j] = a_val
                    size[j] = np.uint32(s_val)
                    kind[j] = LOAD
                    j += 1
                addr[j] = a_val
                size[j] = np.uint32(s_val)
                kind[j] = LOAD if c1 == 76 else STORE
                j += 1
        else:
            while buf[q] != 10:
                q += 1
        p = q + 1
        line += 1
    return j, -1
