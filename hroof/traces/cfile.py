"""Kernel files: a loop nest written in C (kerncraft's kernel format), parsed into a
:class:`Nest`, the unbound description :mod:`hroof.traces.affine` turns into a plan.

A kernel file holds array and scalar declarations and one nest of ``for`` loops, as
in Hammer et al., "Kerncraft: A Tool for Analytic Performance Modeling of Loop
Kernels" (2017); sizes are named constants (plain identifiers, not ``#define``\\ s)
given on the command line as ``NAME=VALUE``. The subset (``docs/kernels.md``):

* ``double``, ``float`` or ``int`` scalars, and arrays of one to four dimensions whose
  sizes are constants or constant arithmetic (``double a[N + 2][M]``);
* one nest of ``for`` loops: ``for (int i = LO; i < HI; i++)`` (or ``<=``, ``++i``,
  ``i += STEP``, ``i = i + STEP`` with a positive constant step; several upper bounds
  joined by ``&&`` take the smallest); bounds are constants and affine expressions of
  the outer indices; a loop body holds statements, then at most one inner loop, then
  statements;
* statements ``x = e``, ``x += e``, ``x -= e``, ``x *= e`` (``x`` an array element or a
  scalar) whose array indices are affine in the loop indices; ``e`` made of array
  elements, scalars, constants, numbers, ``+ - * /`` and parentheses.

Scalars live in registers (no traffic); ``#pragma`` lines are ignored, any other
preprocessor line is refused. Anything else is refused with one line naming the file,
line, column and construct (:class:`~hroof._base.errors.HroofError`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from hroof._base.errors import HroofError

#: Bytes of each element type of the subset.
CTYPES = {"double": 8, "float": 4, "int": 4}
#: The assignment operators of the subset and the arithmetic one each implies.
ASSIGN_OPS = {"=": None, "+=": "+", "-=": "-", "*=": "*"}
#: Most array dimensions.
MAX_DIMS = 4
#: Most loops in the nest.
MAX_LOOPS = 8
#: Parameter names that are the kernel file's own, not constants of the file.
RESERVED = ("flops", "sweeps", "warmup", "align", "gap", "cores", "grain")

_WRAP = "void hroof_kernel(void) {\n"


@dataclass(frozen=True)
class Array:
    """A declared array: name, element type, dimension expressions (pycparser nodes)."""

    name: str
    ctype: str
    dims: tuple
    where: str

    @property
    def elem(self) -> int:
        return CTYPES[self.ctype]


@dataclass(frozen=True)
class Loop:
    """One ``for`` loop: its index, lower bound, upper bounds ``(node, inclusive)`` (the
    smallest holds), and step (a node of constants)."""

    var: str
    lo: object
    his: tuple
    step: object
    where: str


@dataclass(frozen=True)
class Access:
    """One array access of a statement: array, ``"load"`` or ``"store"``, index nodes,
    where it is and its text (``a[k][j][i - 1]``)."""

    array: str
    kind: str
    index: tuple
    where: str
    text: str


@dataclass(frozen=True)
class Statement:
    """A statement of the nest: the loop whose body holds it (``level``, 0 outermost),
    ``slot`` ``"pre"`` (before the inner loop), ``"body"`` (innermost) or ``"post"``;
    its accesses in order (reads in source order, then the target's read for a compound
    assignment, then the write); its floating-point operations; where; its text."""

    level: int
    slot: str
    accesses: tuple
    flops: int
    where: str
    text: str


@dataclass(frozen=True)
class Nest:
    """A parsed kernel file, before its constants are bound."""

    path: str
    digest: str
    arrays: tuple
    scalars: dict
    loops: tuple
    statements: tuple
    constants: tuple

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)


def _strip(text: str, path: str) -> str:
    """Comments blanked (newlines kept, so lines and columns stay), ``#pragma`` lines
    blanked, other preprocessor lines refused."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(text[i])
            i += 1
    lines = "".join(out).split("\n")
    for k, line in enumerate(lines):
        s = line.strip()
        if s.startswith("#"):
            if re.match(r"#\s*pragma\b", s):
                lines[k] = ""
                continue
            word = s.split()[0]
            raise HroofError(
                f"{path}:{k + 1}:{line.index('#') + 1}: preprocessor line '{word}' is outside "
                "the kernel-file subset: give constants as NAME=VALUE words"
            )
    return "\n".join(lines)


def _where(path: str, node) -> str:
    c = getattr(node, "coord", None)
    if c is None or c.line is None:
        return path
    return f"{path}:{c.line - 1}:{c.column or 1}"


def _text(node) -> str:
    from pycparser import c_generator

    text = " ".join(c_generator.CGenerator().visit(node).split())
    return text[:60] + " ..." if len(text) > 64 else text


class _Parser:
    """Walks pycparser's tree of the wrapped kernel and builds the :class:`Nest`."""

    def __init__(self, path: str):
        self.path = path
        self.arrays: list[Array] = []
        self.scalars: dict[str, str] = {}
        self.loops: list[Loop] = []
        self.statements: list[Statement] = []
        self.constants: list[str] = []

    # ---------------------------------------------------------------- errors
    def fail(self, node, what: str):
        raise HroofError(f"{_where(self.path, node)}: {what}")

    def outside(self, node, construct: str):
        self.fail(node, f"{construct} is outside the kernel-file subset (docs/kernels.md)")

    # ---------------------------------------------------------------- names
    def declared(self, name: str) -> bool:
        return name in self.scalars or any(a.name == name for a in self.arrays)

    def constant(self, node, name: str) -> None:
        if name in RESERVED:
            self.fail(node, f"'{name}' is a parameter of every kernel file; rename the constant")
        if name not in self.constants:
            self.constants.append(name)

    # ---------------------------------------------------------------- declarations
    def declaration(self, decl, top: bool) -> None:
        from pycparser import c_ast

        t = decl.type
        dims = []
        while isinstance(t, c_ast.ArrayDecl):
            if t.dim is None:
                self.fail(decl, f"array {decl.name} needs every dimension's size")
            dims.append(t.dim)
            t = t.type
        if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, c_ast.IdentifierType):
            self.outside(decl, f"declaration of {decl.name} ({type(t).__name__})")
        ctype = " ".join(t.type.names)
        if ctype not in CTYPES:
            self.outside(decl, f"type '{ctype}'")
        if self.declared(decl.name) or decl.name in self.constants:
            self.fail(decl, f"{decl.name} is declared twice (or used before its declaration)")
        if any(lp.var == decl.name for lp in self.loops):
            self.fail(decl, f"{decl.name} is a loop index")
        if dims:
            if not top:
                self.outside(decl, f"array declaration {decl.name} inside the loop nest")
            if len(dims) > MAX_DIMS:
                self.outside(decl, f"array {decl.name} of {len(dims)} dimensions (at most 4)")
            if decl.init is not None:
                self.outside(decl, f"initialiser of array {decl.name}")
            for d in dims:
                self.integer(d, set(), "array size")
            self.arrays.append(Array(decl.name, ctype, tuple(dims), _where(self.path, decl)))
        else:
            self.scalars[decl.name] = ctype
            if decl.init is not None:
                if top:
                    self.value(decl.init, set(), [])  # checked; an initial value moves nothing
                else:
                    return decl.init
        return None

    # ---------------------------------------------------------------- integer expressions
    def integer(self, node, loopvars: set, what: str) -> bool:
        """Check an integer expression affine in ``loopvars``; True if it uses any."""
        from pycparser import c_ast

        if isinstance(node, c_ast.Constant):
            if node.type not in ("int", "long int", "unsigned int", "long long int"):
                self.fail(node, f"{what} must be whole numbers, got {node.value}")
            _int_literal(node, self.path)
            return False
        if isinstance(node, c_ast.ID):
            if node.name in loopvars:
                return True
            if any(lp.var == node.name for lp in self.loops):
                self.fail(node, f"loop index {node.name} is used outside its loop")
            if self.declared(node.name):
                self.fail(node, f"{what} uses variable {node.name}; only constants and loop "
                                "indices may appear in it")  # fmt: skip
            self.constant(node, node.name)
            return False
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            return self.integer(node.expr, loopvars, what)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%"):
            a = self.integer(node.left, loopvars, what)
            b = self.integer(node.right, loopvars, what)
            if node.op == "*" and a and b:
                self.fail(node, f"non-affine {what} '{_text(node)}': a product of loop indices")
            if node.op in ("/", "%") and (a or b):
                self.fail(node, f"non-affine {what} '{_text(node)}': '{node.op}' of a loop index")
            return a or b
        if isinstance(node, c_ast.ArrayRef):
            self.fail(node, f"non-affine {what} '{_text(node)}': an array element in it")
        self.outside(node, f"'{_text(node)}' ({type(node).__name__}) in {what}")
        return False

    # ---------------------------------------------------------------- value expressions
    def value(self, node, loopvars: set, reads: list) -> tuple[int, bool, bool]:
        """Check a value expression, appending its array reads in source order. Returns
        ``(flops, floating, constant)``: floating-point operations in it, whether its
        value is floating point, whether it is a compile-time constant."""
        from pycparser import c_ast

        if isinstance(node, c_ast.Constant):
            if node.type in ("double", "float"):
                return 0, True, True
            if node.type in ("int", "long int", "unsigned int", "long long int"):
                _int_literal(node, self.path)
                return 0, False, True
            self.outside(node, f"constant {node.value}")
        if isinstance(node, c_ast.ID):
            if node.name in loopvars:
                return 0, False, False
            if any(lp.var == node.name for lp in self.loops):
                self.fail(node, f"loop index {node.name} is used outside its loop")
            if node.name in self.scalars:
                return 0, self.scalars[node.name] != "int", False
            if self.declared(node.name):
                self.fail(node, f"array {node.name} is used without an index")
            self.constant(node, node.name)
            return 0, False, True
        if isinstance(node, c_ast.ArrayRef):
            acc = self.access(node, loopvars, "load")
            reads.append(acc)
            return 0, self.array_of(acc).ctype != "int", False
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            return self.value(node.expr, loopvars, reads)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/"):
            fa, xa, ca = self.value(node.left, loopvars, reads)
            fb, xb, cb = self.value(node.right, loopvars, reads)
            floating = xa or xb
            op = 1 if floating and not (ca and cb) else 0
            return fa + fb + op, floating, ca and cb
        if isinstance(node, c_ast.FuncCall):
            self.outside(node, f"function call '{_text(node)}'")
        self.outside(node, f"'{_text(node)}' ({type(node).__name__})")
        return 0, False, False

    def array_of(self, acc: Access) -> Array:
        return next(a for a in self.arrays if a.name == acc.array)

    def access(self, node, loopvars: set, kind: str) -> Access:
        from pycparser import c_ast

        index = []
        base = node
        while isinstance(base, c_ast.ArrayRef):
            index.insert(0, base.subscript)
            base = base.name
        if not isinstance(base, c_ast.ID):
            self.outside(node, f"access '{_text(node)}'")
        arr = next((a for a in self.arrays if a.name == base.name), None)
        if arr is None:
            what = "a scalar" if base.name in self.scalars else "not a declared array"
            self.fail(node, f"'{_text(node)}': {base.name} is {what}")
        if len(index) != len(arr.dims):
            self.fail(node, f"'{_text(node)}' has {len(index)} indices; {arr.name} has "
                            f"{len(arr.dims)} dimensions")  # fmt: skip
        for sub in index:
            self.integer(sub, loopvars, "index")
        return Access(arr.name, kind, tuple(index), _where(self.path, node), _text(node))

    # ---------------------------------------------------------------- statements
    def statement(self, node, loopvars: set, level: int, slot: str) -> None:
        from pycparser import c_ast

        if isinstance(node, c_ast.Decl):
            init = self.declaration(node, top=False)
            if init is not None:  # double s = e; : a scalar written
                reads: list[Access] = []
                flops = self.value(init, loopvars, reads)[0]
                self.statements.append(Statement(level, slot, tuple(reads), flops,
                                                 _where(self.path, node), _text(node)))  # fmt: skip
            return
        if isinstance(node, c_ast.EmptyStatement):
            return
        if not isinstance(node, c_ast.Assignment):
            self.outside(node, f"statement '{_text(node)}' ({type(node).__name__})")
        if node.op not in ASSIGN_OPS:
            self.outside(node, f"assignment operator '{node.op}'")
        reads = []
        flops, _, _ = self.value(node.rvalue, loopvars, reads)
        target = node.lvalue
        accesses = list(reads)
        if isinstance(target, c_ast.ArrayRef):
            acc = self.access(target, loopvars, "store")
            floating = self.array_of(acc).ctype != "int"
            if node.op != "=":
                accesses.append(Access(acc.array, "load", acc.index, acc.where, acc.text))
            accesses.append(acc)
        elif isinstance(target, c_ast.ID) and target.name in self.scalars:
            floating = self.scalars[target.name] != "int"
        elif isinstance(target, c_ast.ID) and any(lp.var == target.name for lp in self.loops):
            self.fail(node, f"assignment to loop index {target.name}")
        else:
            self.fail(node, f"assignment to '{_text(target)}': not a declared array or scalar")
        if node.op != "=" and floating:
            flops += 1
        self.statements.append(Statement(level, slot, tuple(accesses), flops,
                                         _where(self.path, node), _text(node)))  # fmt: skip

    # ---------------------------------------------------------------- loops
    def loop(self, node, loopvars: set) -> None:
        from pycparser import c_ast

        level = len(self.loops)
        if level >= MAX_LOOPS:
            self.outside(node, f"a nest of more than {MAX_LOOPS} loops")
        var, lo = self.loop_init(node)
        if var in loopvars:
            self.fail(node, f"loop index {var} is the index of an outer loop")
        if (var in self.scalars and self.scalars[var] != "int") or any(
            a.name == var for a in self.arrays
        ):
            self.fail(node, f"loop index {var} is declared as something else")
        self.scalars.pop(var, None)  # an int declared before the nest, used as an index
        self.integer(lo, loopvars, "loop bound")
        his = self.loop_cond(node, var, loopvars)
        step = self.loop_next(node, var)
        self.loops.append(Loop(var, lo, tuple(his), step, _where(self.path, node)))
        inner = loopvars | {var}
        body = node.stmt
        items = body.block_items or [] if isinstance(body, c_ast.Compound) else [body]
        seen_loop = False
        for item in items:
            if isinstance(item, c_ast.For):
                if seen_loop:
                    self.outside(item, "a second loop in one body (one nest: one loop a level)")
                seen_loop = True
                self.loop(item, inner)
            elif isinstance(item, c_ast.Compound):
                self.outside(item, "a nested block { ... } without a loop")
            else:
                self.statement(item, inner, level, "post" if seen_loop else "pre")
        if not seen_loop:  # the innermost loop: its statements are the body
            self.statements = [
                Statement(s.level, "body", s.accesses, s.flops, s.where, s.text)
                if s.level == level else s
                for s in self.statements
            ]  # fmt: skip

    def loop_init(self, node):
        from pycparser import c_ast

        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
            d = init.decls[0]
            if (isinstance(d.type, c_ast.TypeDecl) and isinstance(d.type.type, c_ast.IdentifierType)
                    and d.type.type.names == ["int"] and d.init is not None):  # fmt: skip
                return d.name, d.init
        if (
            isinstance(init, c_ast.Assignment)
            and init.op == "="
            and isinstance(init.lvalue, c_ast.ID)
        ):
            return init.lvalue.name, init.rvalue
        self.outside(node, "loop initialisation (write 'int i = LO' or 'i = LO')")
        return None

    def loop_cond(self, node, var: str, loopvars: set) -> list:
        from pycparser import c_ast

        out = []

        def one(c):
            if isinstance(c, c_ast.BinaryOp) and c.op == "&&":
                one(c.left)
                one(c.right)
                return
            if not (isinstance(c, c_ast.BinaryOp) and c.op in ("<", "<=")
                    and isinstance(c.left, c_ast.ID) and c.left.name == var):  # fmt: skip
                self.outside(c if c is not None else node,
                             f"loop condition '{_text(c) if c is not None else ''}' (write "
                             f"'{var} < HI' or '{var} <= HI', joined by &&)")  # fmt: skip
            self.integer(c.right, loopvars, "loop bound")
            out.append((c.right, c.op == "<="))

        one(node.cond)
        return out

    def loop_next(self, node, var: str):
        from pycparser import c_ast

        nx = node.next
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("p++", "++") and _is(nx.expr, var):
            return c_ast.Constant("int", "1")
        if isinstance(nx, c_ast.Assignment) and _is(nx.lvalue, var):
            step = None
            if nx.op == "+=":
                step = nx.rvalue
            elif (nx.op == "=" and isinstance(nx.rvalue, c_ast.BinaryOp) and nx.rvalue.op == "+"
                  and _is(nx.rvalue.left, var)):  # fmt: skip
                step = nx.rvalue.right
            if step is not None:
                self.integer(step, set(), "loop step")
                return step
        self.outside(nx if nx is not None else node,
                     f"loop increment (write '{var}++', '++{var}' or '{var} += STEP')")  # fmt: skip
        return None


def _is(node, var: str) -> bool:
    from pycparser import c_ast

    return isinstance(node, c_ast.ID) and node.name == var


def _int_literal(node, path: str) -> int:
    text = node.value.rstrip("uUlL")
    try:
        return int(text, 0) if not (len(text) > 1 and text[0] == "0" and text.isdigit()) \
            else int(text, 8)  # fmt: skip
    except ValueError:
        raise HroofError(f"{_where(path, node)}: integer constant {node.value!r}") from None


def _parser():
    """pycparser's parser, made to name the next token's line and column in the errors it
    raises without one ("Invalid expression"; pycparser 3's parser, else as it is)."""
    from pycparser import c_parser

    class Located(c_parser.CParser):
        def _parse_error(self, msg, coord):
            if coord is None or isinstance(coord, str):
                try:
                    tok = self._peek()
                    coord = self._tok_coord(tok) if tok is not None else coord
                except Exception:  # another pycparser: its own message
                    pass
            super()._parse_error(msg, coord)

    return Located()


def parse_text(text: str, path: str = "<kernel>") -> Nest:
    """Parse kernel-file ``text`` (``path`` names it in messages) into a :class:`Nest`.

    >>> nest = parse_text("double a[N], b[N];\\nfor (int i = 0; i < N; i++) b[i] += 2.0*a[i];")
    >>> [(acc.array, acc.kind) for acc in nest.statements[0].accesses]
    [('a', 'load'), ('b', 'load'), ('b', 'store')]
    >>> nest.statements[0].flops, nest.constants
    (2, ('N',))
    """
    from pycparser import c_ast, c_parser

    clean = _strip(text, path)
    try:
        tree = _parser().parse(_WRAP + clean + "\n}\n", path)
    except c_parser.ParseError as exc:
        msg = str(exc)
        m = re.match(r"^(.*?):(\d+):(\d+):\s*(.*)$", msg)
        if m:
            line = int(m.group(2)) - 1
            where = f"{path}:{line}:{m.group(3)}" if line >= 1 else path
            if line > len(text.splitlines()):  # the closing brace hroof adds: the end
                where = f"{path}: at the end of the file"
            raise HroofError(f"{where}: not valid C (pycparser: {m.group(4)})") from None
        raise HroofError(f"{path}: not valid C (pycparser: {msg.split(': ', 1)[-1]})") from None
    funcs = tree.ext
    if len(funcs) != 1 or not isinstance(funcs[0], c_ast.FuncDef):
        raise HroofError(f"{path}: a kernel file holds declarations and one loop nest, "
                         "no functions")  # fmt: skip
    p = _Parser(path)
    items = funcs[0].body.block_items or []
    nest = None
    for item in items:
        if isinstance(item, c_ast.Decl) and nest is None:
            p.declaration(item, top=True)
        elif isinstance(item, c_ast.For) and nest is None:
            nest = item
            p.loop(item, set())
        elif isinstance(item, c_ast.FuncDef) or (isinstance(item, c_ast.Decl) and isinstance(
                item.type, c_ast.FuncDecl)):  # fmt: skip
            p.outside(item, "a function")
        elif nest is None:
            p.fail(
                item,
                f"'{_text(item)}' before the loop nest: a kernel file holds "
                "declarations, then one loop nest",
            )
        else:
            p.outside(item, f"'{_text(item)}' after the loop nest (one nest a file)")
    if nest is None:
        raise HroofError(f"{path}: no loop nest (a kernel file holds one 'for' nest)")
    if not any(s.accesses for s in p.statements):
        raise HroofError(f"{path}: the nest touches no array")
    return Nest(
        path=path,
        digest=hashlib.sha256(text.encode()).hexdigest()[:16],
        arrays=tuple(p.arrays),
        scalars=dict(p.scalars),
        loops=tuple(p.loops),
        statements=tuple(p.statements),
        constants=tuple(p.constants),
    )


def parse_file(path: str | Path) -> Nest:
    """Parse the kernel file at ``path`` (:func:`parse_text`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise HroofError(f"kernel file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HroofError(f"kernel file {path}: cannot read it ({exc})") from None
    return parse_text(text, str(path))


def is_kernel_file(name: str) -> bool:
    """True when a kernel name names a kernel file (it ends in ``.c``)."""
    return isinstance(name, str) and name.lower().endswith(".c")
