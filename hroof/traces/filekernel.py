"""A kernel file as a :class:`~hroof.traces.kernels.Kernel`: its constants are its
parameters, and its plan feeds every command that takes a kernel.

``hroof simulate path/to/kernel.c N=1000 M=1000``: a kernel name ending in ``.c`` is a
kernel file (:func:`hroof.traces.get_kernel`). Its parameters are the constants the file
uses (whole numbers, all required) and five of every kernel file:

* ``flops``: the flop count of one iteration of the innermost loop, overriding the
  count from the statements (-1, the default: counted; see :func:`counted_flops`);
* ``sweeps``, ``warmup``: the nest run ``warmup + sweeps`` times, the first ``warmup``
  simulated and not counted (steady state), as the built-in stencils do;
* ``align``, ``gap``: the layout of the arrays, as for the built-in kernels.

Semantics (tested against the built-in kernels, access by access): arrays are laid out
in declaration order from byte 2^30, each ``align``-aligned (:func:`~hroof.traces.
kernels.layout`); each statement makes its reads in source order, then (compound
assignment) the read of its target, then its write; flops are the statements'
floating-point ``+ - * /`` (an operation between two constants is folded, not counted;
``x += e`` counts as ``x = x + e``: one more; unary minus is not counted).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from typing import Any

from hroof._base.errors import HroofError
from hroof._base.guards import check_time
from hroof.traces.affine import CHECK_EVERY, Bound, Walked, _nest_gen, bind, upper_counts, walk
from hroof.traces.cfile import Nest, parse_file
from hroof.traces.kernels import ALIGN, Kernel, Param, Plan
from hroof.traces.limits import MAX_SECONDS, PACE

#: Rows a second the plan's walk takes, at the least, and the longest walk accepted.
WALK_PACE = 1e7
WALK_SECONDS = 3600.0

#: Parameters every kernel file has, after its constants.
FILE_PARAMS = (
    Param("flops", -1, "flops of one innermost iteration (-1: counted from the statements)",
          minimum=-1),
    Param("sweeps", 1, "times the nest runs, counted", minimum=1),
    Param("warmup", 0, "times the nest runs first, not counted (steady state)", minimum=0),
    Param("align", ALIGN, "alignment of each array, bytes (a power of two)", minimum=1),
    Param("gap", 0, "extra bytes between consecutive arrays (padding)", minimum=0),
)  # fmt: skip


def counted_flops(nest: Nest) -> dict:
    """Flops per execution of each slot: ``{(level, slot): flops}``."""
    out: dict = {}
    for st in nest.statements:
        out[(st.level, st.slot)] = out.get((st.level, st.slot), 0) + st.flops
    return out


@dataclass(frozen=True)
class FileKernel(Kernel):
    """A kernel file's kernel: :meth:`bind` requires every constant."""

    nest: Nest | None = None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        from hroof._base.errors import suggest

        consts = ", ".join(self.nest.constants) or "none"
        raise HroofError(
            f"{self.name} uses no constant '{name}'{suggest(name, self.nest.constants)}; its "
            f"constants: {consts} (and {', '.join(p.name for p in FILE_PARAMS)})"
        )

    def bind(self, **values: Any) -> Plan:
        missing = [c for c in self.nest.constants if c not in values]
        if missing:
            raise HroofError(
                f"{self.name}: constant{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} not given (write "
                f"{' '.join(f'{m}=VALUE' for m in missing)})"
            )
        return super().bind(**values)


def _row_flops(nest: Nest, b: Bound, w: Walked) -> int:
    """Exact flops of one run of the nest: the body's per iteration, plus each pre and post
    slot's per execution (an execution per iteration of its loop)."""
    per = counted_flops(nest)
    total = per.get((b.depth - 1, "body"), 0) * w.iterations
    outer = sum(v for (lv, slot), v in per.items() if slot != "body")
    if outer:
        total += _outer_flops(b, w, per)
    return total


def _outer_flops(b: Bound, w: Walked, per: dict) -> int:
    """Flops of the statements outside the innermost loop: each runs once per iteration of
    its loop (every loop inside it runs at least once: :func:`build` checks)."""
    total = 0
    for lv in range(b.depth - 1):
        f = per.get((lv, "pre"), 0) + per.get((lv, "post"), 0)
        total += f * int(w.counts[lv])
    return total


def build(nest: Nest, p: dict) -> Plan:
    """The plan of ``nest`` with parameters ``p`` (constants and the file parameters)."""
    consts = {c: p[c] for c in nest.constants}
    b = bind(nest, consts, align=p["align"], gap=p["gap"])
    rows, iters = upper_counts(b)  # absurd sizes refused before the walk
    what = f"{nest.path} ({', '.join(f'{k}={v}' for k, v in consts.items())})"
    check_time(rows, WALK_PACE, WALK_SECONDS, f"walking the rows of {what}",
               hint="; choose smaller sizes")  # fmt: skip
    check_time(iters * int(b.seg[-1]) * (p["sweeps"] + p["warmup"]), PACE, MAX_SECONDS,
               f"simulating {what}", hint="; choose smaller sizes")  # fmt: skip
    # checkpoints: the default stride, or one that needs no more than 2^20 of them
    w = walk(b, every=None if rows + iters < CHECK_EVERY << 20 else (rows + iters) >> 20)
    _check(nest, b, w)
    per = b.seg[-1]  # every access of every slot: the most one iteration emits
    accesses_sweep = _accesses(b, w)
    sweeps, warm = p["sweeps"], p["warmup"]
    flops_sweep = _row_flops(nest, b, w) if p["flops"] < 0 else p["flops"] * w.iterations
    footprint = 0
    for arr in b.arrays:  # the box of indices each array is touched in
        ts = [t for t, (acc, _) in enumerate(b.accesses) if acc.array == arr.name]
        if not ts:
            continue
        count = 1
        for k in range(len(b.dims[arr.name])):
            lo = min(int(w.dmin[t, k]) for t in ts)
            hi = max(int(w.dmax[t, k]) for t in ts)
            count *= hi - lo + 1
        footprint += count * arr.elem
    units, start = _outer_loop(b, w)
    args = (b.lo_c, b.lo_a, b.hi_c, b.hi_a, b.step, b.depth, b.base, b.stride, b.asize,
            b.akind, b.seg, w.iterations, w.ck_pos, w.ck_idx, int(per))  # fmt: skip
    return Plan(
        arrays=b.arrays,
        flops=flops_sweep * sweeps,
        iterations=w.iterations * (warm + sweeps),
        per_iteration=max(int(per), 1),
        accesses=accesses_sweep * (warm + sweeps),
        footprint=footprint,
        gen=_nest_gen,
        args=args,
        warmup=w.iterations * warm,
        outer_units=units,
        outer_start=start,
        sweeps=sweeps,
        warmup_sweeps=warm,
        notes=_notes(nest, p),
        extra={"kernel_file": nest.path, "digest": nest.digest},
    )


def _start_of(starts: tuple, total: int, u: int) -> int:
    return total if u >= len(starts) else starts[u]


def _identity(u: int) -> int:
    return u


def _outer_loop(b: Bound, w: Walked):
    """(units, start) of the outermost loop, split across ``cores=P`` threads as OpenMP's
    ``schedule(static)`` does (docs/cache-model.md, "Several cores"): a single loop's
    iterations, or the outermost loop's iterations that reach the innermost loop (their
    starts from the walk)."""
    if b.depth == 1:
        return w.iterations, _identity
    if len(w.outer) == 0:
        return 0, None
    return len(w.outer), partial(_start_of, tuple(int(x) for x in w.outer), w.iterations)


def _notes(nest: Nest, p: dict) -> str:
    if p["flops"] >= 0:
        return f"{p['flops']} flops an innermost iteration (flops= given)"
    body = counted_flops(nest).get((len(nest.loops) - 1, "body"), 0)
    return (f"{body} flops an innermost iteration, counted from the statements "
            "(floating-point + - * /; x += e counts one more)")  # fmt: skip


def _accesses(b: Bound, w: Walked) -> int:
    """Accesses of one run: the body's per iteration plus the outer slots'."""
    body = int(b.seg[b.depth] - b.seg[b.depth - 1]) * w.iterations
    for lv in range(b.depth - 1):
        n = int(b.seg[lv + 1] - b.seg[lv])  # pre(lv)
        n += int(b.seg[2 * b.depth - 1 - lv] - b.seg[2 * b.depth - 2 - lv])  # post(lv)
        if n:
            body += n * int(w.counts[lv])
    return body


def _check(nest: Nest, b: Bound, w: Walked) -> None:
    """Refuse, before anything runs: a nest without iterations, statements an empty
    inner loop would skip, an access outside its array's declared bounds."""
    if w.iterations == 0:
        raise HroofError(f"{nest.path}: the nest runs no iteration at these constants")
    if b.seg[b.depth] == b.seg[b.depth - 1]:  # (the generator counts innermost iterations)
        lp = nest.loops[-1]
        raise HroofError(f"{lp.where}: the innermost loop ({lp.var}) touches no array; a "
                         "kernel file's innermost statements must access one")  # fmt: skip
    outer = [s for s in nest.statements if s.slot != "body" and s.accesses]
    if outer and w.empty >= 0:
        st = min(outer, key=lambda s: s.level)
        if st.level < w.empty:
            lp = nest.loops[w.empty]
            raise HroofError(
                f"{st.where}: '{st.text}' runs around loop {lp.var} ({lp.where}), which has "
                "no iteration for some outer index at these constants; hroof runs a "
                "statement outside the innermost loop with that loop's first or last "
                "iteration"
            )
    for t, (acc, _st) in enumerate(b.accesses):
        ds = b.dims[acc.array]
        for k, d in enumerate(ds):
            lo, hi = int(w.dmin[t, k]), int(w.dmax[t, k])
            if lo > hi:
                continue  # never runs
            if lo < 0 or hi >= d:
                bad = lo if lo < 0 else hi
                raise HroofError(
                    f"{acc.where}: {acc.text} is out of bounds: index {k + 1} reaches {bad}, "
                    f"and {acc.array} has {d} elements in dimension {k + 1} (0..{d - 1}) at "
                    "these constants"
                )


_CACHE: dict = {}


def load_kernel_file(path: str) -> FileKernel:
    """The :class:`FileKernel` of the file at ``path`` (parsed once per content)."""
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    nest = parse_file(path)
    params = tuple(Param(c, 0, f"constant {c} of {path}") for c in nest.constants)
    loops = " ".join(lp.var for lp in nest.loops)
    k = FileKernel(
        name=path,
        summary=f"kernel file: loops {loops}, {len(nest.statements)} statements",
        params=params + FILE_PARAMS,
        build=partial(build, nest),
        nest=nest,
    )
    if key is not None:
        _CACHE[key] = k
    return k


def kernel_digest(path: str) -> str:
    """A hash of the kernel file's text (the result cache keys on it, not on the path)."""
    return load_kernel_file(path).nest.digest


__all__ = [
    "FILE_PARAMS",
    "FileKernel",
    "build",
    "counted_flops",
    "kernel_digest",
    "load_kernel_file",
]
