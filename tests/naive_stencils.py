"""Plain-Python twins of the stencil kernels: the trace as a list of (addr, size, kind)."""

from __future__ import annotations

LOAD, STORE = 0, 1


def _grid(plan):
    """The plan's grid: sizes, strides (elements), element size, and the two bases."""
    p = plan.params
    nx = p["nx"] or p["n"]
    ny = p["ny"] or p["n"]
    three_d = "nz" in p
    nz = (p["nz"] or p["n"]) if three_d else 1
    js = nx + 2 + p["pad_row"]
    ks = js * (ny + 2) + (p["pad_plane"] if three_d else 0)
    old, new = plan.arrays
    assert old.name == "old" and new.name == "new"
    return nx, ny, nz, js, ks, old.elem, old.base, new.base, three_d


def _range(lo, hi, step):
    return range(lo, hi, step if step else hi - lo)


def stencil_trace(plan):
    """The trace of ``plan`` (any of stencil5, stencil7, stencil27), by loop nest."""
    nx, ny, nz, js, ks, elem, a, b, three_d = _grid(plan)
    p = plan.params
    bj, bk = p.get("bj", 0), p.get("bk", 0)
    trace = []
    old, new = a, b
    for _sweep in range(p["sweeps"]):
        for kk in _range(1, nz + 1, bk):
            for jj in _range(1, ny + 1, bj):
                for k in range(kk, min(kk + (bk or nz), nz + 1)):
                    for j in range(jj, min(jj + (bj or ny), ny + 1)):
                        for i in range(1, nx + 1):
                            # 2D grids have no k halo: row j of the only plane.
                            c = i + j * js + (k * ks if three_d else 0)
                            for off in _offsets(plan.kernel, js, ks):
                                trace.append((old + (c + off) * elem, elem, LOAD))
                            trace.append((new + c * elem, elem, STORE))
        old, new = new, old
    return trace


def _offsets(kernel, js, ks):
    if kernel == "stencil5":
        return [0, -1, +1, -js, +js]
    if kernel == "stencil7":
        return [0, -1, +1, -js, +js, -ks, +ks]
    assert kernel == "stencil27"
    out = []
    for dk in (-1, 0, 1):
        for dj in (-1, 0, 1):
            for di in (-1, 0, 1):
                out.append(dk * ks + dj * js + di)
    return out


def distinct_bytes(trace):
    """Number of distinct bytes the trace touches."""
    touched = set()
    for addr, size, _kind in trace:
        for byte in range(size):
            touched.add(addr + byte)
    return len(touched)
