"""The analytic kernel table: flops, compulsory bytes and ideal AI as functions of N.

The lecture (the LBNL roofline lecture, "机器平衡和运算强度", the table
"Operation / Flop's / Data / AI (ideal)") gives the orders only::

    DAXPY   O(N)        O(N)    O(1)
    DGEMV   O(N^2)      O(N^2)  O(1)
    DGEMM   O(N^3)      O(N^2)  O(N)
    FFTs    O(N log N)  O(N)    O(log N)
    CG      O(N)        O(N)    O(1)
    MG      O(N)        O(N)    O(1)
    N-body  O(N^2)      O(N^2)  O(1)

This module writes the constants out. The common assumptions: double precision
(8-byte reals, 16-byte complex, 4-byte indices); the *compulsory* data volume
is every input read once and every output written once, as if the cache held
everything a kernel reuses (so the ideal AI is an upper bound on the AI at
memory); no write-allocate read of an output (a write-allocate cache adds one
read of every output that is not also an input: hroof's simulator counts it
separately, as ``write_allocate`` traffic). The per-kernel constants and what
they assume are in each :class:`TableKernel`'s ``doc``; where the lecture
gives a number (SpMV's AI below 0.166, the stencil's 7 flops a point) it is
used and checked in the tests.

Besides the lecture's seven rows the table has the kernels hroof also
*simulates* and that the rows stand on: ``spmv`` (the core of CG) and the
stencils (the operator of CG and MG on a grid). :func:`simulation` names the
registered kernel and the size that matches an N, so ``hroof table
--simulate`` can put the simulated AI per level next to the ideal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hroof._base.errors import HroofError, suggest
from hroof.machine.model import Machine

#: Largest count (flops or bytes) a row may reach: the simulator's int64 counters.
MAX_COUNT = 2**63 - 1
#: Nonzeros per row of the CG/SpMV operator by default: the 7-point stencil.
DEFAULT_NNZ_PER_ROW = 7
#: Most accesses one simulated row may take with ``--simulate`` (``--max-accesses``).
DEFAULT_MAX_ACCESSES = 10_000_000
#: Bytes of a double, of a double complex, of an index.
_D, _Z, _I = 8, 16, 4


@dataclass(frozen=True)
class TableKernel:
    """One row kind of the table.

    Attributes
    ----------
    name : str
        As given on the command line (``--kernel fft``).
    title : str
        What it computes.
    n_means : str
        What N counts.
    flops, data : callable
        ``f(N, k)`` -> exact flop count / compulsory bytes (``k`` is the
        nonzeros per row, used by ``cg`` and ``spmv`` only).
    orders : tuple of str
        Flops, data and AI as O(.) of N, from the formulas.
    lecture : tuple of str or None
        The lecture's orders for this row (None: not in the lecture's table).
    doc : str
        The constants and the assumptions.
    valid : callable
        ``valid(N, k)`` -> None, or why N is not valid for this kernel.
    """

    name: str
    title: str
    n_means: str
    flops: Callable[[int, int], int]
    data: Callable[[int, int], int]
    orders: tuple[str, str, str]
    lecture: tuple[str, str, str] | None
    doc: str
    valid: Callable[[int, int], str | None] = field(default=lambda n, k: None)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _fft_valid(n: int, k: int) -> str | None:
    if n < 2 or n & (n - 1):
        return f"fft needs N a power of two >= 2 (radix-2), got {n}"
    return None


def _nnz_valid(n: int, k: int) -> str | None:
    if k > n:
        return f"{k} nonzeros per row need N >= {k} rows, got N = {n}"
    return None


def mg_points(n: int) -> int:
    """Points summed over the V-cycle's levels: N + N/8 + N/64 + ... while N/8^l is a
    whole number (each coarser grid halves every dimension of a 3D grid).

    >>> mg_points(512), mg_points(1000), mg_points(7)
    (585, 1125, 7)
    """
    total, m = 0, n
    while True:
        total += m
        if m % 8:
            return total
        m //= 8


KERNELS: dict[str, TableKernel] = {
    k.name: k
    for k in (
        TableKernel(
            "daxpy", "y = a*x + y", "vector elements",
            lambda n, k: 2 * n,
            lambda n, k: 3 * _D * n,
            ("N", "N", "1"), ("N", "N", "1"),
            "2 flops an element (a multiply and an add); x and y read, y written: 24 bytes "
            "an element. AI = 1/12 = 0.083. (The lecture's Z = alpha*X + Y moves the same 24 "
            "bytes without write-allocate.)",
        ),
        TableKernel(
            "dot", "s = x . y", "vector elements",
            lambda n, k: 2 * n,
            lambda n, k: 2 * _D * n,
            ("N", "N", "1"), None,
            "2 flops an element (a multiply and an add); x and y read, the sum kept in a "
            "register: 16 bytes an element. AI = 1/8 = 0.125 (0.25 in single precision).",
        ),
        TableKernel(
            "dgemv", "y = A x, A N x N", "rows = columns of A",
            lambda n, k: 2 * n * n,
            lambda n, k: _D * (n * n + 2 * n),
            ("N^2", "N^2", "1"), ("N^2", "N^2", "1"),
            "2N^2 flops; A (8N^2 bytes) and x (8N) read once, y (8N) written once. "
            "AI = 2N^2 / (8N^2 + 16N) -> 1/4 as N grows.",
        ),
        TableKernel(
            "dgemm", "C = C + A B, N x N", "rows = columns of each matrix",
            lambda n, k: 2 * n**3,
            lambda n, k: 4 * _D * n * n,
            ("N^3", "N^2", "N"), ("N^3", "N^2", "N"),
            "2N^3 flops (a multiply and an add per (i, j, p)); A, B and C read once and C "
            "written once: 32N^2 bytes, AI = N/16. BLAS semantics (C is read), as hroof's "
            "gemm kernel; the lecture's loop C = A B, which does not read C, moves 24N^2 "
            "(AI N/12): the same O(N).",
        ),
        TableKernel(
            "fft", "1D complex FFT, radix 2", "points (a power of two)",
            lambda n, k: 5 * n * _log2(n),
            lambda n, k: 2 * _Z * n,
            ("N log N", "N", "log N"), ("N log N", "N", "log N"),
            "5 N log2 N flops, the conventional count of a radix-2 complex FFT (the one "
            "FFTW's benchFFT reports Mflops with); N complex doubles (16 bytes) read once and "
            "written once, in place: 32N bytes. AI = (5/32) log2 N.",
            _fft_valid,
        ),
        TableKernel(
            "cg", "one conjugate-gradient iteration", "unknowns (matrix rows)",
            lambda n, k: (2 * k + 10) * n,
            lambda n, k: (12 * k + 4 + 56) * n + _I,
            ("N", "N", "1"), ("N", "N", "1"),
            "Per iteration on a CSR matrix of k nonzeros a row (default k = 7, the 7-point "
            "stencil operator): one SpMV (2kN flops), two dot products (2N each) and three "
            "axpy updates of x, r and p (2N each): (2k + 10)N flops. Bytes: the matrix once "
            "(8-byte value + 4-byte column index a nonzero, 4(N + 1) of row pointers) and "
            "the vectors x, r, p read once and x, r, p, q written once (56N): "
            "(12k + 60)N + 4. k = 7: 24N flops / (144N + 4) bytes, AI -> 1/6.",
            _nnz_valid,
        ),
        TableKernel(
            "mg", "one multigrid V-cycle, 3D 7-point", "fine-grid points",
            lambda n, k: 30 * mg_points(n),
            lambda n, k: 26 * mg_points(n),
            ("N", "N", "1"), ("N", "N", "1"),
            "A V-cycle over the levels N, N/8, N/64, ... (each coarser grid halves every "
            "dimension, while N/8^l is whole: about 8N/7 points in all). Per point of a "
            "level: one pre- and one post-smoothing weighted-Jacobi sweep, each r = f - Au "
            "(7 flops for Au, as the stencil7 kernel, + 1) and u += w r (2): 20 flops; the "
            "residual (8); restriction by averaging 8 children (1 a fine point); "
            "prolongation and correction (1): 30 flops. Bytes per point of a level: u and f "
            "read once, u written once (24), the restricted right-hand side written and "
            "the coarse correction read (1/8 of the points each: 1 + 1): 26. AI = 30/26.",
        ),
        TableKernel(
            "nbody", "all-pairs N-body forces, one step", "particles",
            lambda n, k: 20 * n * n,
            lambda n, k: (4 + 3) * _D * n,
            ("N^2", "N", "N"), ("N^2", "N^2", "1"),
            "20 flops per pairwise interaction (the count of Nyland, Harris and Prins, GPU "
            "Gems 3 ch. 31), N^2 interactions; positions and mass read once (32 bytes a "
            "particle), accelerations written once (24): 56N bytes, AI = 5N/14 = O(N). The "
            "lecture's table lists O(N^2) data and O(1) AI: that is the traffic without "
            "reuse, every interaction loading the other particle (32 bytes each, AI 0.625).",
        ),
        TableKernel(
            "spmv", "y = A x, CSR (the core of CG)", "matrix rows",
            lambda n, k: 2 * k * n,
            lambda n, k: (12 * k + 16) * n + _I,
            ("N", "N", "1"), None,
            "2 flops per nonzero, k a row (default 7); per nonzero an 8-byte value and a "
            "4-byte column index, 4(N + 1) of row pointers, x read (8N) and y written (8N) "
            "once: (12k + 16)N + 4 bytes. AI = 2k/(12k + 16) < 1/6 for every k: the "
            "lecture's 'flop:byte < 0.166' (2 flops over 12 bytes of value and index).",
            _nnz_valid,
        ),
        TableKernel(
            "stencil5", "2D 5-point Jacobi sweep", "grid points",
            lambda n, k: 5 * n,
            lambda n, k: 2 * _D * n,
            ("N", "N", "1"), None,
            "5 flops a point (hroof's stencil5: 1 multiply + 4 adds); the old grid read once "
            "and the new written once: 16 bytes a point (the halo, O(N^(1/2)), left out). "
            "AI = 5/16.",
        ),
        TableKernel(
            "stencil7", "3D 7-point Jacobi sweep (the operator of CG and MG)", "grid points",
            lambda n, k: 7 * n,
            lambda n, k: 2 * _D * n,
            ("N", "N", "1"), None,
            "7 flops a point (the lecture's count: 1 multiply + 6 adds); the old grid read "
            "once and the new written once: 16 bytes a point (the halo, O(N^(2/3)), left "
            "out). AI = 7/16 = 0.44; 7/24 with the write-allocate read of the new grid.",
        ),
        TableKernel(
            "stencil27", "3D 27-point Jacobi sweep", "grid points",
            lambda n, k: 30 * n,
            lambda n, k: 2 * _D * n,
            ("N", "N", "1"), None,
            "30 flops a point (hroof's stencil27: 4 multiplies + 26 adds); 16 bytes a point "
            "as stencil7. AI = 30/16.",
        ),
    )
}  # fmt: skip

#: The rows of the lecture's table, in its order.
LECTURE = ("daxpy", "dgemv", "dgemm", "fft", "cg", "mg", "nbody")


def get_table_kernel(name: str) -> TableKernel:
    """The table kernel ``name``; an unknown name is an error with a suggestion."""
    try:
        return KERNELS[name]
    except KeyError:
        raise HroofError(
            f"unknown table kernel {name!r}{suggest(name, KERNELS)}; known: {', '.join(KERNELS)}"
        ) from None


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise HroofError(f"{what} must be a whole number >= 1, got {value!r}")
    return value


def largest_n(kernel: TableKernel, k: int = DEFAULT_NNZ_PER_ROW) -> int:
    """The largest N whose flop count and byte count both stay within :data:`MAX_COUNT`."""
    lo, hi = 1, 1
    while max(kernel.flops(hi, k), kernel.data(hi, k)) <= MAX_COUNT:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if max(kernel.flops(mid, k), kernel.data(mid, k)) <= MAX_COUNT:
            lo = mid
        else:
            hi = mid
    return lo


def check_n(kernel: str | TableKernel, n, k: int = DEFAULT_NNZ_PER_ROW) -> int:
    """Validate N (and k) for a kernel; return N as an int, or raise a HroofError."""
    kern = kernel if isinstance(kernel, TableKernel) else get_table_kernel(kernel)
    n = _whole(n, "N")
    k = _whole(k, "nnz_per_row")
    if n < 1:
        raise HroofError(f"N must be a whole number >= 1, got {n}")
    if k < 1:
        raise HroofError(f"nnz_per_row must be a whole number >= 1, got {k}")
    why = kern.valid(n, k)
    if why:
        raise HroofError(why)
    if max(kern.flops(n, k), kern.data(n, k)) > MAX_COUNT:
        raise HroofError(
            f"N = {n} overflows {kern.name}'s counts (more than 2^63 - 1 flops or bytes); "
            f"the largest N is {largest_n(kern, k):,}"
        )
    return n


@dataclass(frozen=True)
class Row:
    """One kernel at one N: the analytic figures, and the bound on a machine.

    ``ai`` is FLOP/byte; ``bound`` GFLOP/s = min(peak, ai * memory bandwidth);
    ``ridge`` FLOP/byte = peak / memory bandwidth; ``region`` is
    ``"memory-bound"`` (ai < ridge) or ``"compute-bound"``. The machine
    figures are None when the machine lacks the peak or memory bandwidth.
    """

    kernel: str
    n: int
    nnz_per_row: int | None
    flops: int
    bytes: int
    ai: float
    orders: tuple[str, str, str]
    lecture: tuple[str, str, str] | None
    ridge: float | None = None
    bound: float | None = None
    region: str | None = None

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "n": self.n,
            "nnz_per_row": self.nnz_per_row,
            "flops": self.flops,
            "bytes": self.bytes,
            "ai": self.ai,
            "orders": dict(zip(("flops", "data", "ai"), self.orders, strict=True)),
            "lecture_orders": None
            if self.lecture is None
            else dict(zip(("flops", "data", "ai"), self.lecture, strict=True)),
            "ridge_point": self.ridge,
            "bound_gflop_s": self.bound,
            "region": self.region,
        }


def table_row(
    kernel: str, n, *, nnz_per_row: int = DEFAULT_NNZ_PER_ROW, machine: Machine | None = None
) -> Row:
    """Flops, compulsory bytes, ideal AI of ``kernel`` at ``n`` (and the bound on a machine).

    Parameters
    ----------
    kernel : str
        One of :data:`KERNELS` (``daxpy``, ``dot``, ``dgemv``, ``dgemm``, ``fft``, ``cg``,
        ``mg``, ``nbody``, ``spmv``, ``stencil5``, ``stencil7``, ``stencil27``).
    n : int
        The problem size N (what it counts: the kernel's ``n_means``).
    nnz_per_row : int
        Nonzeros a row of the ``cg`` and ``spmv`` operator.
    machine : Machine, optional
        For the ridge point, bound and region: its memory bandwidth and its
        fp64 peak (:func:`fp64_peak`; every row is double precision).

    Raises
    ------
    HroofError
        Unknown kernel; N < 1, not whole, too small for the kernel (fft: a
        power of two >= 2; cg, spmv: N >= nnz_per_row) or so large the counts
        pass 2^63 - 1.

    >>> r = table_row("daxpy", 1000)
    >>> r.flops, r.bytes, round(r.ai, 4)
    (2000, 24000, 0.0833)
    >>> table_row("fft", 1024).ai   # 5 * 10 / 32
    1.5625
    """
    kern = get_table_kernel(kernel)
    k = nnz_per_row
    n = check_n(kern, n, k)
    flops, nbytes = kern.flops(n, k), kern.data(n, k)
    ai = flops / nbytes
    ridge = bound = region = None
    peak = fp64_peak(machine) if machine is not None else None
    if peak is not None and machine.memory_bandwidth:
        ridge = peak / machine.memory_bandwidth
        bound = min(peak, ai * machine.memory_bandwidth)
        region = "memory-bound" if ai < ridge else "compute-bound"
    uses_k = kern.name in ("cg", "spmv")
    return Row(kern.name, n, k if uses_k else None, flops, nbytes, ai, kern.orders,
               kern.lecture, ridge, bound, region)  # fmt: skip


def fp64_peak(machine: Machine) -> float | None:
    """The machine's double-precision peak, GFLOP/s (None when its file gives none).

    The table's kernels are all double precision, so a machine whose roof is
    at another precision (a GPU's fp32 ``peak``) is compared at its ``fp64``
    entry of ``peaks``.
    """
    peak_for = getattr(machine, "peak_for", None)
    if peak_for is None:  # a Machine without per-precision peaks: its peak is fp64
        return machine.peak
    return peak_for("fp64")


def _root(n: int, d: int) -> int:
    """The whole number nearest to the d-th root of n (at least 1)."""
    r = max(1, round(n ** (1.0 / d)))
    while (r + 1) ** d <= n and abs((r + 1) ** d - n) < abs(r**d - n):
        r += 1
    while r > 1 and abs((r - 1) ** d - n) < abs(r**d - n):
        r -= 1
    return r


def simulation(kernel: str, n: int, nnz_per_row: int = DEFAULT_NNZ_PER_ROW
               ) -> tuple[str, dict, str] | None:  # fmt: skip
    """The registered kernel that matches a table row at N: ``(name, params, note)``.

    daxpy, dot -> ``daxpy n=N``, ``dot n=N``; dgemv -> ``dgemv n=N``; dgemm -> ``gemm m=n=k=N``;
    spmv -> ``spmv matrix=poisson3d n=round(N^(1/3))`` (7 nonzeros a row only);
    stencil5 -> ``stencil5 n=round(N^(1/2))``; stencil7 and stencil27 ->
    ``n=round(N^(1/3))`` (the grid nearest to N points). None for the rows
    hroof has no kernel for (fft, cg, mg, nbody: cg's core is the spmv row, mg's
    the stencil7 row).
    """
    if kernel in ("daxpy", "dot"):
        return kernel, {"n": n}, f"n={n}"
    if kernel == "dgemv":
        return "dgemv", {"n": n}, f"n={n}"
    if kernel == "dgemm":
        return "gemm", {"m": n, "n": n, "k": n}, f"m=n=k={n}"
    if kernel == "spmv":
        if nnz_per_row != 7:
            return None
        g = _root(n, 3)
        return "spmv", {"matrix": "poisson3d", "n": g}, f"poisson3d n={g} ({g**3} rows)"
    if kernel in ("stencil5", "stencil7", "stencil27"):
        d = 2 if kernel == "stencil5" else 3
        g = _root(n, d)
        return kernel, {"n": g}, f"n={g} ({g**d} points)"
    return None


@dataclass(frozen=True)
class Simulated:
    """A table row's kernel simulated at the matching size.

    ``levels`` are (name, AI FLOP/byte) of every cache level and memory;
    ``compulsory_ai`` is flops over the compulsory traffic to memory (the
    last cache level's compulsory wall): the simulated counterpart of the
    ideal AI, equal to it up to line rounding, the halo and the size rounding.
    ``skipped`` says why there is no result.
    """

    kernel: str
    params: dict
    note: str
    accesses: int
    levels: tuple[tuple[str, float | None], ...] = ()
    compulsory_ai: float | None = None
    skipped: str | None = None

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "params": dict(self.params),
            "size": self.note,
            "accesses": self.accesses,
            "levels": [{"name": n, "ai": a} for n, a in self.levels],
            "compulsory_ai": self.compulsory_ai,
            "skipped": self.skipped,
        }


def plan_simulation(row: Row, max_accesses: int):
    """``(Simulated stub, plan or None)``: the plan to run, or the reason it is skipped."""
    from hroof.traces import plan_kernel

    spec = simulation(row.kernel, row.n, row.nnz_per_row or DEFAULT_NNZ_PER_ROW)
    if spec is None:
        return None, None
    name, params, note = spec
    accesses = _accesses(name, params)
    if accesses > max_accesses:
        return Simulated(name, params, note, accesses,
                         skipped=f"{accesses:,} accesses > {max_accesses:,}"), None  # fmt: skip
    plan = plan_kernel(name, **params)
    return Simulated(name, params, note, plan.accesses), plan


def _accesses(name: str, params: dict) -> int:
    """A kernel's access count without building its plan (cheap for any size)."""
    if name == "daxpy":
        return 3 * params["n"]
    if name == "dot":
        return 2 * params["n"]
    if name == "dgemv":
        return 2 * params["n"] ** 2 + params["n"]
    if name == "gemm":
        return 4 * params["m"] * params["n"] * params["k"]
    if name == "spmv":  # poisson3d: 7g^3 - 6g^2 nonzeros, g^3 rows
        g = params["n"]
        return 1 + 2 * g**3 + 3 * (7 * g**3 - 6 * g**2)
    g = params["n"]
    per = {"stencil5": (6, 2), "stencil7": (8, 3), "stencil27": (28, 3)}[name]
    return per[0] * g ** per[1]


def finish_simulation(stub: Simulated, result) -> Simulated:
    """Fill a stub with a simulation's per-level AIs and compulsory AI to memory."""
    levels = (*((lv.name, lv.ai) for lv in result.levels), (result.memory.name, result.memory.ai))
    last = result.levels[-1].traffic_below
    comp = None
    if last is not None and result.flops and last["compulsory"]:
        comp = result.flops / last["compulsory"]
    return Simulated(stub.kernel, stub.params, stub.note, stub.accesses, levels, comp)


def build_table(
    kernels, ns, *, nnz_per_row: int = DEFAULT_NNZ_PER_ROW, machine: Machine | None = None,
    strict: bool = True,
) -> tuple[list[Row], list[str]]:  # fmt: skip
    """Rows for every kernel at every N (kernel-major).

    With ``strict`` every (kernel, N) must be valid; without it the pairs a
    kernel cannot take (fft at an N that is not a power of two ...) are left
    out and described in the returned notes. Other errors (unknown kernel,
    N < 1) are raised either way.
    """
    rows, notes = [], []
    for name in kernels:
        kern = get_table_kernel(name)
        for n in ns:
            n = _whole(n, "N")
            if n < 1:
                raise HroofError(f"N must be a whole number >= 1, got {n}")
            if not strict:
                try:
                    check_n(kern, n, nnz_per_row)
                except HroofError as exc:
                    notes.append(f"{kern.name} at N={n:,} left out: {exc}")
                    continue
            rows.append(table_row(name, n, nnz_per_row=nnz_per_row, machine=machine))
    return rows, notes


def ai_of(kernel: str, n, nnz_per_row: int = DEFAULT_NNZ_PER_ROW) -> float:
    """The ideal AI (FLOP/byte) of ``kernel`` at ``n``."""
    return table_row(kernel, n, nnz_per_row=nnz_per_row).ai


__all__ = [
    "KERNELS",
    "LECTURE",
    "Row",
    "Simulated",
    "TableKernel",
    "ai_of",
    "build_table",
    "check_n",
    "fp64_peak",
    "get_table_kernel",
    "largest_n",
    "mg_points",
    "simulation",
    "table_row",
]
