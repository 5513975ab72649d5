"""The one parser and formatter of the numbers a user types or reads.

Every whole number hroof accepts, on the command line (``--n 1e6``), in
``KEY=VALUE`` words (``n=1e6``), in sweep ranges (``n=1e3..1e7:x10``) and in
machine files (``size = "48 KiB"``), goes through :func:`parse_int`; every real
number (seconds, GB/s, GFLOP/s) through :func:`parse_float`. So the same
spellings work everywhere:

========================  =====================================================
``1000``, ``1_000``       plain digits, underscores between digits allowed
``1e6``, ``2.5e3``        scientific notation, when the value is a whole number
``48 KiB``, ``2MiB``      binary units (``KB`` = ``KiB``, as cache datasheets mean it)
========================  =====================================================

and nowhere does a value silently change: ``1.9e0`` where a whole number is
needed is an error, never 1. Commas are not digit separators anywhere, because
in ``n=8,16,32`` they separate values.

Formatting: :func:`format_bytes` (binary units, one decimal, for people),
:func:`format_size` (exact, for machine files and tables) and :func:`format_si`
(decimal prefixes, for rates and counts).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from hroof._base.errors import HroofError

#: The largest whole number any hroof quantity may take: the simulator, the trace
#: generators and the trace files hold counts and addresses in 64-bit integers.
INT_MAX = 2**63 - 1

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}
_NUMBER_RE = re.compile(
    r"^([+-]?(?:\d+(?:_\d+)*)?(?:\.\d+(?:_\d+)*)?(?:[eE][+-]?\d+)?)\s*([a-zA-Z]*)$"
)
#: Exponents beyond this are refused before Decimal builds a huge integer.
_MAX_EXPONENT = 40


def _exact(text: str, what: str, exc: type[HroofError], *, units: bool) -> Fraction:
    # units=True: a whole-number context (sizes allowed); False: a real number.
    """The exact value of ``text`` (digits, a decimal point, an exponent, a unit)."""
    clean = text.strip()
    if "," in clean:
        raise exc(
            f"{what} {text!r}: write whole numbers without commas (1_000_000 or 1e6); "
            "commas separate values"
        )
    m = _NUMBER_RE.match(clean)
    digits = m.group(1) if m else ""
    unit = m.group(2).lower() if m else ""
    bad_unit = unit and (not units or unit not in _UNITS)
    if not m or not any(c.isdigit() for c in digits) or bad_unit:
        kind, example = (
            ("a whole number", '1000, 1e6 or "48 KiB"') if units else ("a number", "0.5 or 1e6")
        )
        raise exc(f"{what} must be {kind}, got {text!r} (write e.g. {example})")
    try:
        dec = Decimal(digits.replace("_", ""))
    except InvalidOperation:  # pragma: no cover (the pattern admits only valid literals)
        raise exc(f"{what} {text!r} is not a number") from None
    if not dec.is_finite() or abs(dec.adjusted()) > _MAX_EXPONENT:
        raise exc(f"{what} {text!r} is out of range (at most {INT_MAX:,})")
    return Fraction(dec) * _UNITS[unit]


def parse_int(
    value: Any,
    what: str = "value",
    *,
    minimum: int | None = None,
    maximum: int | None = INT_MAX,
    units: bool = True,
    exc: type[HroofError] = HroofError,
) -> int:
    """A whole number from what a user typed or a file held; never truncated.

    Parameters
    ----------
    value : int, float, or str
        ``1000``, ``"1_000"``, ``"1e6"``, ``"48 KiB"``; a float only if it is whole.
    what : str
        How the error message names the value (``"n"``, ``"--chunk-size"``).
    minimum, maximum : int, optional
        Inclusive bounds (``maximum`` defaults to the 64-bit limit).
    units : bool
        Whether binary size units (``KiB``, ``MiB``, ...) are accepted.
    exc : type
        The error class to raise (a :class:`HroofError`).

    >>> parse_int("1e6"), parse_int("1_000"), parse_int("48 KiB"), parse_int(2.0)
    (1000000, 1000, 49152, 2)
    >>> parse_int("1.9e0", "n")
    Traceback (most recent call last):
    ...
    hroof._base.errors.HroofError: n must be a whole number, got '1.9e0'
    """
    if isinstance(value, bool):
        raise exc(f"{what} must be a whole number, got {value!r}")
    if isinstance(value, numbers.Integral):
        exact = Fraction(int(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise exc(f"{what} must be a finite whole number, got {value!r}")
        exact = Fraction(value)
    elif isinstance(value, str):
        exact = _exact(value, what, exc, units=units)
    else:
        raise exc(f"{what} must be a whole number, got {value!r}")
    if exact.denominator != 1:
        raise exc(f"{what} must be a whole number, got {value!r}")
    number = int(exact)
    if minimum is not None and number < minimum:
        raise exc(f"{what} must be at least {minimum:,}, got {value!r}")
    if maximum is not None and number > maximum:
        raise exc(f"{what} must be at most {maximum:,}, got {value!r}")
    return number


def parse_float(
    value: Any,
    what: str = "value",
    *,
    minimum: float | None = None,
    positive: bool = False,
    exc: type[HroofError] = HroofError,
) -> float:
    """A finite real number (``0.2``, ``1e-3``, ``1_000.5``); NaN and infinity are errors.

    >>> parse_float("0.25"), parse_float("1e3"), parse_float(7)
    (0.25, 1000.0, 7.0)
    """
    if isinstance(value, bool):
        raise exc(f"{what} must be a number, got {value!r}")
    if isinstance(value, numbers.Real):
        number = float(value)
    elif isinstance(value, str):
        number = float(_exact(value, what, exc, units=False))
    else:
        raise exc(f"{what} must be a number, got {value!r}")
    if not math.isfinite(number):
        raise exc(f"{what} must be a finite number, got {value!r}")
    if positive and number <= 0:
        raise exc(f"{what} must be positive, got {value!r}")
    if minimum is not None and number < minimum:
        raise exc(f"{what} must be at least {minimum:g}, got {value!r}")
    return number


def parse_size(value: Any, what: str = "size", *, exc: type[HroofError] = HroofError) -> int:
    """A positive byte count: ``32768``, ``"48 KiB"``, ``"2 MiB"``, ``"1.5 MiB"`` (whole bytes).

    >>> parse_size("48 KiB"), parse_size("2 MiB"), parse_size(4096), parse_size("1e3")
    (49152, 2097152, 4096, 1000)
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float, str)):
        raise exc(f"{what} must be a byte count, got {value!r}")
    if isinstance(value, str):
        try:
            exact = _exact(value, what, exc, units=True)
        except HroofError:
            raise exc(
                f'{what} {value!r} is not a size; write e.g. 32768, "48 KiB" or "2 MiB"'
            ) from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise exc(f"{what} must be a byte count, got {value!r}")
    else:
        exact = Fraction(value)
    if exact.denominator != 1:
        if isinstance(value, float):
            raise exc(f"{what} must be a byte count, got {value!r}")
        raise exc(f"{what} {value!r} is not a whole number of bytes")
    if exact <= 0:
        raise exc(f"{what} must be positive, got {value!r}")
    if exact > INT_MAX:
        raise exc(f"{what} must be at most {INT_MAX:,} bytes, got {value!r}")
    return int(exact)


def range_count(text: str, what: str = "range") -> int:
    """How many values ``parse_range`` would give, computed without building them."""
    lo, hi, step, factor = _range_parts(text, what)
    if factor is None:
        return (hi - lo) // step + 1
    return sum(1 for _ in _geometric(lo, hi, factor))


def _range_parts(text: str, what: str) -> tuple[int, int, int, Fraction | None]:
    lo_text, _, rest = text.partition("..")
    hi_text, _, step = rest.partition(":")
    lo = parse_int(lo_text, f"{what} start")
    hi = parse_int(hi_text, f"{what} end")
    if hi < lo:
        raise HroofError(f"range {text!r} runs backwards")
    step = step.strip()
    if step.lower().startswith("x"):
        try:
            factor = Fraction(Decimal(step[1:].replace("_", "")))
        except (InvalidOperation, ValueError):
            factor = Fraction(0)
        if factor <= 1 or lo < 1:
            raise HroofError(f"range {text!r}: a factor step needs xF with F > 1, from >= 1")
        return lo, hi, 1, factor
    inc = step[1:] if step.startswith("+") else (step or "1")
    try:
        step_n = parse_int(inc, f"range {text!r} step", minimum=1)
    except HroofError:
        raise HroofError(f"range {text!r}: write the step as +N (N >= 1) or xF") from None
    return lo, hi, step_n, None


def _geometric(lo: int, hi: int, factor: Fraction) -> Iterator[int]:
    """``lo, lo*F, lo*F^2, ...`` rounded, duplicates dropped, up to ``hi`` (exact arithmetic)."""
    v = Fraction(lo)
    last = None
    while round(v) <= hi:
        if round(v) != last:
            last = round(v)
            yield last
        v *= factor


def parse_range(text: str, what: str = "range", *, limit: int | None = None) -> list[int]:
    """Expand ``LO..HI`` (step 1), ``LO..HI:+N`` or ``LO..HI:xF``; ends in any spelling.

    ``limit`` bounds the number of values, checked before any value is built.

    >>> parse_range("16..128:x2"), parse_range("1e3..1e5:x10"), parse_range("8..32:+8")
    ([16, 32, 64, 128], [1000, 10000, 100000], [8, 16, 24, 32])
    """
    lo, hi, step, factor = _range_parts(text, what)
    if limit is not None:
        count = (hi - lo) // step + 1 if factor is None else None
        if count is None:
            count = 0
            for _ in _geometric(lo, hi, factor):
                count += 1
                if count > limit:
                    break
        if count > limit:
            raise HroofError(f"range {text!r} has {count:,} values; at most {limit:,}")
    if factor is None:
        return list(range(lo, hi + 1, step))
    return list(_geometric(lo, hi, factor))


# ---------------------------------------------------------------------------- formatting
def format_bytes(nbytes: float) -> str:
    """A byte count for people: binary units, one decimal.

    >>> format_bytes(512), format_bytes(1536), format_bytes(5 * 2**30)
    ('512 B', '1.5 KiB', '5.0 GiB')
    """
    if nbytes < 1024:
        return f"{nbytes:.0f} B"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if round(value, 1) < 1024 or unit == "PiB":
            break
    return f"{value:.1f} {unit}"


def format_size(nbytes: int) -> str:
    """A byte count with the largest binary unit that divides it (exact; a machine file's
    spelling).

    >>> format_size(49152), format_size(2097152), format_size(1000), format_size(28835840)
    ('48 KiB', '2 MiB', '1000 B', '27.5 MiB')
    """
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
        if nbytes >= scale and (8 * nbytes) % scale == 0:  # 27.5 MiB, 1.375 MiB, exactly
            whole, eighths = divmod(8 * nbytes // scale, 8)
            return f"{whole}{str(eighths / 8)[1:]} {unit}"
    return f"{nbytes} B"


_SI = [(1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"), (1.0, ""), (1e3, "k"),
       (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P")]  # fmt: skip


def format_si(x: float | None, unit: str, *, digits: int = 3, small: bool = True) -> str:
    """A quantity with a decimal SI prefix: ``34.2 µs``, ``17.2 GFLOP``, ``402.7 MB``.

    ``small=False`` uses no prefix below one (counts); ``None`` prints as ``-``.

    >>> format_si(3.42e-5, "s"), format_si(1.72e10, "FLOP", digits=4), format_si(0, "W")
    ('34.2 µs', '17.2 GFLOP', '0 W')
    """
    if x is None:
        return "-"
    if x == 0:
        return f"0 {unit}"
    table = _SI if small else [s for s in _SI if s[0] >= 1.0]
    scale, prefix = table[0]
    for s, p in table:
        if abs(x) >= s * (1 - 0.5 * 10 ** (1 - digits)):
            scale, prefix = s, p
    return f"{x / scale:.{digits}g} {prefix}{unit}"
