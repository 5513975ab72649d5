"""hroof's layer conditions of a nest (:mod:`hroof.roofline.nest_lc`) against kerncraft's
LC predictor (Hammer et al., "Kerncraft: A Tool for Analytic Performance Modeling of
Loop Kernels", 2017) on the same kernel files, where kerncraft is installed.

Both read the file; per cache level of the teaching machine, kerncraft picks the
largest reuse distance whose requirement fits the level's whole size and predicts
``(misses + evicts)`` elements an iteration from below, or none when every array fits
("full caching"); hroof picks the largest loop condition that fits (safety 1, the rule
its sweeps use) and predicts ``bytes_per_iteration``, or none when every array fits.
Where both apply they agree byte for byte. The differences, each asserted below:

* kerncraft takes only files whose array sizes are plain constants in the order of the
  loops (``a[M][N][N]``, not hroof's ``a[N+2][N+2][N+2]``), unit steps (no blocked
  ``jj += BJ``), every statement in the innermost loop (not ``matvec.c``'s ``y[i] =
  s`` after its row) and indices in loop order (not ``transpose.c``, not
  ``matvec-ji.c``): it refuses the others, which hroof models;
* kerncraft sees reuse only between offsets of one array: an access without the inner
  index (``x[j]`` with ``i`` inner) is left out, so it never predicts its reuse across
  the outer loop; hroof does (the ``i`` condition of ``s += A[i][j]*x[j]`` in column
  order).
"""

from __future__ import annotations

import re

import pytest

kerncraft = pytest.importorskip("kerncraft")
#: kerncraft's own deprecation warnings (distutils, ruamel) are not hroof's.
pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::PendingDeprecationWarning"
)

from hroof.roofline.nest_lc import nest_conditions  # noqa: E402

#: The teaching machine's caches (hroof/data/teaching.toml) as a kerncraft machine file.
MACHINE = """\
kerncraft version: 0.8.18
model type: hroof comparison
model name: teaching
sockets: 1
cores per socket: 1
threads per core: 1
NUMA domains per socket: 1
cores per NUMA domain: 1
clock: 1 GHz
FLOPs per cycle: {SP: {total: 8, FMA: 4, ADD: 4, MUL: 4}, DP: {total: 4, FMA: 2, ADD: 2, MUL: 2}}
isa: x86
cacheline size: 64 B
memory hierarchy:
- {level: L1, cores per group: 1, groups: 1, cache per group: {sets: 16, ways: 4, cl_size: 64,
   replacement_policy: LRU, write_allocate: true, write_back: true, load_from: L2,
   store_to: L2}}
- {level: L2, cores per group: 1, groups: 1, cache per group: {sets: 64, ways: 8, cl_size: 64,
   replacement_policy: LRU, write_allocate: true, write_back: true, load_from: L3,
   store_to: L3}}
- {level: L3, cores per group: 1, groups: 1, cache per group: {sets: 256, ways: 16,
   cl_size: 64, replacement_policy: LRU, write_allocate: true, write_back: true,
   load_from: null, store_to: null}}
- {level: MEM, cores per group: 1}
"""
SIZES = [4 << 10, 32 << 10, 256 << 10]

#: Kernel files in kerncraft's own style (sizes as plain constants): both tools take them.
KERNCRAFT_STYLE = {
    "3d-7pt": """double a[M][N][N];
double b[M][N][N];
double c0;
for (int k = 1; k < M-1; ++k)
  for (int j = 1; j < N-1; ++j)
    for (int i = 1; i < N-1; ++i)
      b[k][j][i] = c0*(a[k][j][i] + a[k][j][i-1] + a[k][j][i+1] + a[k][j-1][i]
                       + a[k][j+1][i] + a[k-1][j][i] + a[k+1][j][i]);
""",
    "3d-long-range": """double a[M][N][N];
double b[M][N][N];
double c0, c1, c2;
for (int k = 2; k < M-2; ++k)
  for (int j = 2; j < N-2; ++j)
    for (int i = 2; i < N-2; ++i)
      b[k][j][i] = c0*a[k][j][i]
        + c1*(a[k][j][i-1] + a[k][j][i+1] + a[k][j-1][i] + a[k][j+1][i]
              + a[k-1][j][i] + a[k+1][j][i])
        + c2*(a[k][j][i-2] + a[k][j][i+2] + a[k][j-2][i] + a[k][j+2][i]
              + a[k-2][j][i] + a[k+2][j][i]);
""",
    "2d-5pt": """double a[M][N];
double b[M][N];
double s;
for (int j = 1; j < M-1; ++j)
  for (int i = 1; i < N-1; ++i)
    b[j][i] = (a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i]) * s;
""",
    "2d-gauss-seidel": """double a[M][N];
for (int j = 1; j < M-1; ++j)
  for (int i = 1; i < N-1; ++i)
    a[j][i] = 0.25*(a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i]);
""",
    "triad": """double x[N], y[N], z[N];
double q;
for (int i = 0; i < N; ++i)
  z[i] = x[i] + q*y[i];
""",
}


def _kerncraft(text: str, consts: dict, tmp_path) -> list[int]:
    """Bytes an iteration kerncraft's LC predictor sends below each level."""
    from kerncraft.cacheprediction import LayerConditionPredictor
    from kerncraft.kernel import KernelCode
    from kerncraft.machinemodel import MachineModel

    path = tmp_path / "teaching.yml"
    path.write_text(MACHINE)
    machine = MachineModel(str(path))
    kernel = KernelCode(text, machine, filename=None)
    for name, value in consts.items():
        kernel.set_constant(name, value)
    lc = LayerConditionPredictor(kernel, machine)
    return [8 * (int(o["misses"]) + int(o["evicts"])) for o in lc.results["cache"]]


def _hroof(path: str, consts: dict, total: int) -> list[float]:
    conds = nest_conditions(path, consts, 64)
    out = []
    for size in SIZES:
        if total < size:  # every array fits: nothing moves (kerncraft's "full caching")
            out.append(0)
            continue
        holds = [c for c in conds if c.requirement <= size]
        out.append(holds[-1].bytes_per_iteration)
    return out


@pytest.mark.parametrize("name", sorted(KERNCRAFT_STYLE))
@pytest.mark.parametrize("n", [12, 40, 100, 300])
def test_same_prediction_where_both_apply(tmp_path, name, n):
    text = KERNCRAFT_STYLE[name]
    consts = {"M": n, "N": n} if "M" in text else {"N": n * n}
    path = tmp_path / f"{name}.c"
    path.write_text(text)
    from hroof.traces import plan_kernel

    total = sum(a.nbytes for a in plan_kernel(str(path), **consts).arrays)
    assert _hroof(str(path), consts, total) == _kerncraft(text, consts, tmp_path)


def _clean(text: str) -> str:
    """The comments out (kerncraft's parser takes none)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize(("file", "consts", "why"), [
    ("3d-7pt.c", {"N": 20}, "Number of multiplications in index term"),
    ("3d-7pt-blocked.c", {"N": 20, "BJ": 4, "BK": 20}, "constant increments"),
    ("matvec.c", {"M": 100, "N": 100}, "only allowed in inner most loop"),
    ("transpose.c", {"M": 100, "N": 100}, "Number of multiplications in index term"),
    ("matvec-ji.c", {"M": 100, "N": 100}, "Number of multiplications in index term"),
])  # fmt: skip
def test_kerncraft_refuses_what_hroof_models(tmp_path, file, consts, why):
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "examples" / "kernels" / file
    with pytest.raises((ValueError, AssertionError), match=why):
        _kerncraft(_clean(src.read_text()), consts, tmp_path)
    assert len(nest_conditions(str(src), consts, 64)) >= 2  # hroof finds a reuse


def test_outer_loop_reuse_only_hroof_sees(tmp_path):
    # A x summed in a register, j inner: x[j] is reused across every i.
    text = ("double A[M][N], x[N];\ndouble s;\nfor (int i = 0; i < M; ++i)\n"
            "  for (int j = 0; j < N; ++j)\n    s = s + A[i][j]*x[j];\n")  # fmt: skip
    path = tmp_path / "mv.c"
    path.write_text(text)
    consts = {"M": 2000, "N": 200}  # x (1.6 KiB) fits L1; A (3.2 MiB) fits nothing
    kc = _kerncraft(text, consts, tmp_path)
    mine = _hroof(str(path), consts, 10**12)
    assert kc == [16, 16, 16]  # A and x streamed at every level: x's reuse is not seen
    assert mine == [8, 8, 8]  # x kept: only A streams
