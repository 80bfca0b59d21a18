"""A canonical form of a Python module, for the similarity report: what a script can
change in a program without changing the program is undone, so that two modules one of
which a script made from the other have the same canonical text.

``canonical(source, keep)`` parses ``source`` and returns the unparsed text of a module in
which

- formatting, comments, docstrings and type annotations of functions are gone;
- statements with no effect are dropped: a definition a later one of the same name
  replaces, ``pass``, expressions that only read (constants,
  names, arithmetic, calls of pure builtins such as ``len``), ``if False:`` and ``while 0:``
  blocks, and the like with a test of constants (an ``if True:`` block is kept without its
  test), ``assert True``, ``x = x``, a
  trailing bare ``return``, and, in a function, assignments to names that are never read;
- names the student chose are numbered in order of appearance: module-level functions,
  classes and globals ``g0, g1, ...``, each function's arguments and locals ``v0, v1, ...``,
  attributes set on a method's first argument, and methods, ``a0, a1, ...``; import aliases become what they stand for;
  names in ``keep`` (the contract's, from the starter code), builtins and imported
  names are left alone, as are attribute names (a library's);
- ``x += y`` reads ``x = x + y``; ``if not c: A else: B`` reads ``if c: B else: A`` (so
  do ``!=``, ``is not`` and ``not in`` with an ``else``);
- the operands of ``+``, ``*``, ``&``, ``|``, ``^``, ``and``, ``or``, ``==``, ``!=``, ``is``
  and ``is not`` are in a canonical order, chains of one of them flattened, keyword
  arguments sorted, and a comparison reads ``<``/``<=``, never ``>``/``>=``;
- imports come first, sorted; then the other module-level statements in their order;
  then the functions and classes, the contract's by name, the student's own by shape
  (their text with every chosen name blanked); a class's methods the same way.

The result is never run, so an operand order that short-circuits differently, or a
string added to a number, is of no concern: it only has to be the same for the same
program written in another order or with other names. ``None`` for a module that does
not parse.
"""

from __future__ import annotations

import ast
import builtins
import copy
import operator

BUILTINS = frozenset(dir(builtins))
# Builtins whose call, as a statement on its own, does nothing a test could observe.
PURE_CALLS = frozenset(
    "abs all any bool bytes callable chr dict divmod float format frozenset getattr hasattr "
    "hash hex id int isinstance issubclass len list max min oct ord pow range repr round set "
    "sorted str sum tuple type".split()
)
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
SYMMETRIC = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
FLIPPED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE}
INVERSE = {ast.NotEq: ast.Eq, ast.IsNot: ast.Is, ast.NotIn: ast.In}
COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
ROUNDS = 20  # of dropping unread assignments: a longer chain of them is left (and costs n^2)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def canonical(source: str, keep: frozenset[str] = frozenset()) -> str | None:
    """The canonical text of ``source`` (see the module's docstring); ``keep``: the names
    that are not the student's choice (the starter code's, ``contract_names``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        _resolve_aliases(tree)
        keep = frozenset(keep) | BUILTINS | _imported(tree)
        _drop_redefined(tree)
        tree.body = _simplify(tree.body)
        for scope in _functions(tree):
            _drop_unused(scope)
        _drop_unused_globals(tree, keep)
        tree.body = _simplify(tree.body)
        _expand_augmented(tree)
        bound = {id(scope): _bound_in(scope) for scope in _functions(tree)}
        chosen = _chosen(tree, keep, bound)
        _order(tree, chosen)
        _sort_definitions(tree, keep, chosen)
        _rename(tree, keep, bound)
        _order(tree, None)
        return ast.unparse(tree) + "\n"
    except RecursionError:  # a pathologically deep module: compared as it is
        return None


def contract_names(starter: str) -> frozenset[str]:
    """The names the starter code fixes: its module-level definitions and globals, its
    classes' methods and fields, and every attribute it names (``canonical`` keeps them)."""
    try:
        tree = ast.parse(starter)
    except (SyntaxError, ValueError):
        return frozenset()
    names = set(_bound_at(tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names |= _bound_at(node.body)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


# ---- aliases and dead statements ---------------------------------------------------


def _statements(body: list[ast.stmt]):
    """Every statement in ``body`` and in the blocks nested in it, outer first."""
    for stmt in body:
        yield stmt
        for _, _, block in _blocks(stmt):
            yield from _statements(block)


def _blocks(stmt: ast.AST):
    """``(holder, field, statements)`` for each block of statements directly in ``stmt``
    (the holder is ``stmt``, or one of its ``except`` handlers or ``match`` cases)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield stmt, name, block
    for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield from _blocks(holder)


def _resolve_aliases(tree: ast.Module) -> None:
    """``import a.b as c`` and ``from m import n as z``: every ``c`` reads ``a.b``, every
    ``z`` reads ``n``, and the imports lose their ``as``."""
    aliases: dict[str, str] = {}
    for node in _statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                    alias.asname = None
    if aliases:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in aliases:
                node.id = aliases[node.id]


def _imported(tree: ast.Module) -> frozenset[str]:
    names = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.name for a in node.names}
    return frozenset(names)


def _drop_redefined(tree: ast.Module) -> None:
    """Keep only the last of a module's (or a class's) definitions of one name: the
    one the module ends up with."""

    def last(body: list[ast.stmt]) -> list[ast.stmt]:
        final = {s.name: i for i, s in enumerate(body) if isinstance(s, DEFINITIONS)}
        return [s for i, s in enumerate(body) if final.get(getattr(s, "name", None), i) == i]

    tree.body = last(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = last(node.body)


def _truth(node: ast.expr) -> bool | None:
    """Whether a test is always true or always false, when its text says so (constants,
    comparisons of constants, ``not``, ``and`` and ``or`` of such)."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        truths = [_truth(v) for v in node.values]
        decisive = isinstance(node.op, ast.Or)  # the value that settles it
        if decisive in truths:
            return decisive
        return None if None in truths else not decisive
    operands = [getattr(node, "left", None), *getattr(node, "comparators", ())]
    if isinstance(node, ast.Compare) and all(isinstance(o, ast.Constant) for o in operands):
        values = [o.value for o in operands]
        try:
            return all(COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:]))
        except (KeyError, TypeError):
            return None
    return None


def _pure(node: ast.AST | None) -> bool:
    """Whether evaluating ``node`` on its own line changes nothing (reads only)."""
    if node is None or isinstance(node, (ast.Constant, ast.Name, ast.Lambda)):
        return True
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in PURE_CALLS
            and all(map(_pure, node.args))
            and all(_pure(k.value) for k in node.keywords)
        )
    if isinstance(
        node,
        (ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp)
        + (ast.BoolOp, ast.Compare, ast.Subscript, ast.Slice, ast.IfExp, ast.JoinedStr)
        + (ast.FormattedValue, ast.Starred),
    ):
        return all(_pure(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    return False


def _simplify(body: list[ast.stmt], function: bool = False) -> list[ast.stmt]:
    """``body`` without the statements that do nothing, nested blocks included."""
    kept: list[ast.stmt] = []
    for stmt in body:
        _simplify_blocks(stmt)
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and _pure(stmt.value)):
            continue
        if isinstance(stmt, ast.If) and (truth := _truth(stmt.test)) is not None:
            kept += stmt.body if truth else stmt.orelse
            continue
        if isinstance(stmt, ast.If) and stmt.orelse:
            _positive(stmt)
        if isinstance(stmt, ast.While) and _truth(stmt.test) is False:
            kept += stmt.orelse
            continue
        if isinstance(stmt, ast.Assert) and _truth(stmt.test) is True:
            continue
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Name)
            and stmt.targets[0].id == stmt.value.id
        ):
            continue
        kept.append(stmt)
    while function and kept and _bare_return(kept[-1]):
        kept.pop()
    return kept


def _bare_return(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Return) and (
        stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    )


def _simplify_blocks(stmt: ast.stmt) -> None:
    function = isinstance(stmt, SCOPES)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(stmt, name, _simplify(block, function and name == "body"))
    for handler in getattr(stmt, "handlers", []):
        handler.body = _simplify(handler.body) or [ast.Pass()]
    for case in getattr(stmt, "cases", []):
        case.body = _simplify(case.body) or [ast.Pass()]
    if isinstance(getattr(stmt, "body", None), list) and not stmt.body:
        stmt.body = [ast.Pass()]
    if function:
        stmt.returns = None
        for arg in _arguments(stmt.args):
            arg.annotation = None


def _positive(stmt: ast.If) -> None:
    """``if not c: A else: B`` as ``if c: B else: A``; the same for ``!=``, ``is not`` and
    ``not in``."""
    test = stmt.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        stmt.test = test.operand
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in INVERSE:
        test.ops = [INVERSE[type(test.ops[0])]()]
    else:
        return
    stmt.body, stmt.orelse = stmt.orelse, stmt.body


def _expand_augmented(tree: ast.Module) -> None:
    """``x += y`` as ``x = x + y`` (and so for every augmented assignment)."""
    holders = [(tree, "body", tree.body)]
    holders += [b for s in _statements(tree.body) for b in _blocks(s)]
    for holder, name, block in holders:
        if any(isinstance(s, ast.AugAssign) for s in block):
            setattr(holder, name, [_expanded(s) for s in block])


def _expanded(stmt: ast.stmt) -> ast.stmt:
    if not isinstance(stmt, ast.AugAssign):
        return stmt
    read = copy.deepcopy(stmt.target)
    read.ctx = ast.Load()
    value = ast.BinOp(left=read, op=stmt.op, right=stmt.value)
    return ast.Assign(targets=[stmt.target], value=value, lineno=stmt.lineno)


def _functions(tree: ast.Module) -> list[ast.AST]:
    """The module's functions and methods that are not inside another function."""
    found = []
    for node in tree.body:
        if isinstance(node, SCOPES):
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += [n for n in node.body if isinstance(n, SCOPES)]
    return found


def _drop_unused(scope: ast.AST) -> None:
    """Drop the assignments in ``scope`` (a function) to names never read there, until
    none is left (dropping one can leave another unread) or ``ROUNDS`` have passed."""
    for _ in range(ROUNDS):
        read = set()
        for node in ast.walk(scope):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                read.add(node.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                read |= set(node.names)
        if not _drop_assignments([scope], lambda name, read=read: name not in read, deep=True):
            return


def _drop_unused_globals(tree: ast.Module, keep: frozenset[str]) -> None:
    """Drop module- and class-level assignments to names that are not the contract's
    and are read nowhere in the module, not even as an attribute."""
    read = set(keep)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            read.add(node.id)
        elif isinstance(node, ast.Attribute):
            read.add(node.attr)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    _drop_assignments([tree, *classes], lambda name: name not in read, deep=False)


def _drop_assignments(holders: list[ast.AST], unread, deep: bool) -> bool:
    """Drop the assignments whose every target is a name ``unread`` says is never read,
    from the blocks of ``holders`` (and, when ``deep``, every block nested in them);
    whether any was dropped."""

    def dead(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            targets = [stmt.target]
        else:
            return False
        names = [t for target in targets for t in _flat(target)]
        return all(isinstance(t, ast.Name) and unread(t.id) for t in names)

    owners = [*holders, *(s for h in holders for s in _statements(h.body))] if deep else holders
    dropped = False
    for owner in owners:
        for holder, name, block in list(_blocks(owner)):
            kept = [s for s in block if not dead(s)]
            if len(kept) < len(block):
                setattr(holder, name, kept or ([ast.Pass()] if name == "body" else []))
                dropped = True
    return dropped


def _flat(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for elt in target.elts for t in _flat(elt)]
    return [target]


# ---- names --------------------------------------------------------------------------


def _arguments(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args]
    found += [args.vararg] if args.vararg else []
    found += args.kwonlyargs
    return found + ([args.kwarg] if args.kwarg else [])


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound_at(body: list[ast.stmt]) -> set[str]:
    """Names bound by the statements of one block (not inside nested functions)."""
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, DEFINITIONS):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                names |= _targets(target)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            names |= _targets(stmt.target)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if not isinstance(stmt, DEFINITIONS) and isinstance(block, list):
                names |= _bound_at(block)
    return names


def _bound_in(scope: ast.AST) -> set[str]:
    """Names bound anywhere in a function (its arguments, nested functions and lambdas
    included), less those declared global."""
    names: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, DEFINITIONS) and node is not scope:
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            declared |= set(node.names)
    return names - declared


def _chosen(tree: ast.Module, keep: frozenset[str], bound: dict) -> frozenset[str]:
    """Every name the student chose: bound in a function (``bound``: each function's
    names, ``_bound_in``), or at module or class level and not kept."""
    names = _bound_at(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names |= _bound_at(node.body)
    names -= keep
    for local in bound.values():
        names |= local
    return frozenset(names)


def _in_order(node: ast.AST, known: dict | None = None) -> list[ast.AST]:
    """The nodes under ``node`` in the order their text reads (depth first); ``known``
    maps ``id`` of a node to its own list, spliced in as it is."""
    found, stack = [], [node]
    while stack:
        node = stack.pop()
        if known and id(node) in known:
            found += known[id(node)]
            continue
        found.append(node)
        stack += reversed(list(ast.iter_child_nodes(node)))
    return found


def _dump(node: ast.AST, blank: frozenset[str] | None, memo: dict) -> str:
    """``node``'s structure as text; with ``blank``, every argument and every name in it
    shown as ``_`` (the same however the student named things)."""
    known = memo.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    parts = [type(node).__name__]
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            parts.append(_dump(value, blank, memo))
        elif isinstance(value, list):
            items = (_dump(v, blank, memo) if isinstance(v, ast.AST) else repr(v) for v in value)
            parts.append("[" + ",".join(items) + "]")
        elif blank is not None and (
            (field == "arg" and isinstance(node, ast.arg))
            or (field in ("id", "name", "arg") and value in blank)
        ):
            parts.append("_")
        else:
            parts.append(repr(value))
    text = "(" + " ".join(parts) + ")"
    memo[id(node)] = (node, text)
    return text


def _shape(node: ast.AST, chosen: frozenset[str]) -> str:
    return _dump(node, chosen, {})


def _sort_definitions(tree: ast.Module, keep: frozenset[str], chosen: frozenset[str]) -> None:
    def order(body: list[ast.stmt]) -> list[ast.stmt]:
        imports = sorted(
            (s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))), key=ast.dump
        )
        definitions = sorted(
            (s for s in body if isinstance(s, DEFINITIONS)),
            key=lambda s: (0, s.name, "") if s.name in keep else (1, "", _shape(s, chosen)),
        )
        rest = [s for s in body if not isinstance(s, (ast.Import, ast.ImportFrom, *DEFINITIONS))]
        return imports + rest + definitions

    tree.body = order(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = order(node.body)


def _rename(tree: ast.Module, keep: frozenset[str], bound: dict) -> None:
    """Number the student's names: module-level ``g``, per function ``v`` (``bound``: its
    names), attributes set on a method's first argument and methods ``a``; keyword
    arguments of calls to the module's functions follow their parameters."""
    lists = {id(scope): _in_order(scope) for scope in _functions(tree)}
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    lists |= {id(c): _in_order(c, lists) for c in classes}
    everything = _in_order(tree, lists)
    glob = _numbered(everything, _bound_at(tree.body) - keep, "g")
    attrs: dict[str, str] = {}
    defs = [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
    methods = {m.name for m in defs if isinstance(m, SCOPES) and not m.name.startswith("__")}
    selves = {m.args.args[0].arg for m in defs if isinstance(m, SCOPES) and m.args.args}
    for node in everything:
        new = None
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in selves
        ):
            new = node.attr
        elif isinstance(node, SCOPES) and node.name in methods:
            new = node.name
        if new is not None and new not in keep and new not in attrs:
            attrs[new] = f"a{len(attrs)}"
    owner: dict[int, tuple[ast.AST, dict[str, str]]] = {}
    params: dict[str, dict[str, str]] = {}
    for scope in _functions(tree):
        nodes = lists[id(scope)]
        local = _numbered(nodes, bound[id(scope)], "v")
        owner |= {id(n): (scope, local) for n in nodes}
        if scope in tree.body:
            params[scope.name] = {a.arg: local.get(a.arg, a.arg) for a in _arguments(scope.args)}
    for node in classes:
        nodes = lists[id(node)]
        fields = _bound_at([s for s in node.body if not isinstance(s, SCOPES)]) - keep
        local = _numbered(nodes, fields, "v")
        owner |= {id(n): (node, local) for n in nodes if id(n) not in owner}
    for node in everything:
        scope, local = owner.get(id(node), (None, {}))
        _rename_node(node, local, glob, attrs, params, scope)


def _numbered(nodes, names: set[str], prefix: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in nodes:
        for name in _names_of(node):
            if name in names and name not in found:
                found[name] = f"{prefix}{len(found)}"
    return found


def _names_of(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, DEFINITIONS):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def _rename_node(node, local, glob, attrs, params, scope) -> None:
    def new(name: str) -> str:
        return local.get(name) or glob.get(name) or name

    if isinstance(node, ast.Name):
        node.id = new(node.id)
    elif isinstance(node, ast.arg):
        node.arg = new(node.arg)
    elif isinstance(node, DEFINITIONS) and node is not scope:
        node.name = new(node.name)
    elif isinstance(node, DEFINITIONS):
        node.name = attrs.get(node.name) or glob.get(node.name, node.name)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        node.name = new(node.name)
    elif isinstance(node, ast.Attribute) and node.attr in attrs:
        node.attr = attrs[node.attr]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        called = params.get(node.func.id, {})
        for keyword in node.keywords:
            if keyword.arg in called:
                keyword.arg = called[keyword.arg]


# ---- operand order -------------------------------------------------------------------


def _order(tree: ast.Module, blank: frozenset[str] | None) -> None:
    """Commutative operands sorted by their structure (``_dump``, with ``blank`` names
    blanked), chains of one such operator flattened, keyword arguments sorted by name,
    comparisons turned to read ``<``. In place, innermost first (reversed pre-order puts
    every node after all of its descendants), so a node's key is taken once it is final."""
    memo: dict = {}

    def key(node: ast.AST) -> str:
        return _dump(node, blank, memo)

    for node in reversed(_in_order(tree)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, COMMUTATIVE):
            operands = sorted(_chain(node, type(node.op)), key=key)
            left = operands[0]
            for operand in operands[1:-1]:
                left = ast.BinOp(left=left, op=type(node.op)(), right=operand)
            node.left, node.right = left, operands[-1]
        elif isinstance(node, ast.BoolOp):
            values: list[ast.expr] = []
            for value in node.values:
                same = isinstance(value, ast.BoolOp) and isinstance(value.op, type(node.op))
                values += value.values if same else [value]
            node.values = sorted(values, key=key)
        elif isinstance(node, ast.Compare):
            _direct(node, key)
        elif isinstance(node, ast.Call):
            named = sorted((k for k in node.keywords if k.arg), key=lambda k: k.arg)
            node.keywords = named + [k for k in node.keywords if not k.arg]
        elif isinstance(node, ast.Set):
            node.elts = sorted(node.elts, key=key)


def _chain(node: ast.expr, op: type) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, op):
        return _chain(node.left, op) + _chain(node.right, op)
    return [node]


def _direct(node: ast.Compare, key) -> None:
    """A comparison chain of ``>``/``>=`` (more of them than ``<``/``<=``) read the other
    way round; a lone ``==``, ``!=``, ``is`` or ``is not`` with its operands by ``key``."""
    operands = [node.left, *node.comparators]
    ops = node.ops
    greater = sum(isinstance(op, (ast.Gt, ast.GtE)) for op in ops)
    less = sum(isinstance(op, (ast.Lt, ast.LtE)) for op in ops)
    if not all(isinstance(op, (*SYMMETRIC, *FLIPPED)) for op in ops):
        return
    if greater > less or (
        greater == less == 0 and len(ops) == 1 and key(operands[1]) < key(operands[0])
    ):
        operands.reverse()
        ops = [FLIPPED.get(type(op), type(op))() for op in reversed(ops)]
    node.left, node.comparators, node.ops = operands[0], operands[1:], ops
