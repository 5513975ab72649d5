"""Writing a kernel's trace as ``.npz`` a chunk at a time (memory bounded by one chunk).

:func:`numpy.savez` needs whole arrays; a trace of 10**9 accesses would need 13 GB. The
``.npz`` format is a zip archive of ``.npy`` members, and an ``.npy`` member is a header that
states the array's length followed by the raw elements; since a kernel's plan knows its exact
access count, each member's header is written first and the elements streamed after it,
one member after the other (the generator runs once per member: ``addr``, ``size``,
``kind``). The archive is uncompressed (``ZIP_STORED``) with zip64 records, which
:func:`numpy.load` reads like any other ``.npz``.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterator

import numpy as np

from hroof._base.errors import TraceFormatError

#: The members of a trace archive, their dtypes, and which of (addr, size, kind) they hold.
MEMBERS = (("addr", np.dtype("<u8"), 0), ("size", np.dtype("<u4"), 1), ("kind", np.dtype("u1"), 2))


def write_npz_streaming(
    path: str | os.PathLike, make_chunks: Callable[[], Iterator[tuple]], count: int
) -> None:
    """Write ``count`` accesses, from ``make_chunks()`` (called once per member), as ``.npz``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (exactly this name).
    make_chunks : callable
        Returns a fresh iterator of ``(addr, size, kind)`` chunks, the same each call.
    count : int
        The exact number of accesses the chunks hold.

    Raises
    ------
    TraceFormatError
        A negative address, a size outside 1 .. 2**32 - 1, a kind outside 0..2, or a count
        other than ``count`` (the caller removes the partial file).
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, dtype, j in MEMBERS:
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                header = {"descr": np.lib.format.dtype_to_descr(dtype),
                          "fortran_order": False, "shape": (count,)}  # fmt: skip
                np.lib.format.write_array_header_2_0(f, header)
                written = 0
                for chunk in make_chunks():
                    part = np.asarray(chunk[j])
                    _check(name, part)
                    written += part.shape[0]
                    if written > count:
                        break
                    f.write(part.astype(dtype, copy=False).tobytes())
                if written != count:
                    raise TraceFormatError(
                        f"{os.fspath(path)}: the trace has {written:,} accesses, not {count:,}"
                    )


def _check(name: str, part: np.ndarray) -> None:
    if not part.size:
        return
    lo, hi = int(part.min()), int(part.max())
    bounds = {"addr": (0, 2**63 - 1), "size": (1, 2**32 - 1), "kind": (0, 2)}[name]
    if lo < bounds[0] or hi > bounds[1]:
        raise TraceFormatError(
            f"trace {name} values must lie in {bounds[0]}..{bounds[1]}, got {lo}..{hi}"
        )


__all__ = ["write_npz_streaming"]
