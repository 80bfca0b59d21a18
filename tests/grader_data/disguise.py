"""What a student hiding a copy would run over it: mechanical rewrites of a module's
source, each keeping the program (or, for operand orders, its text's meaning to a reader),
written here with ``ast`` independently of ``grader/canonical.py``, which undoes them.

``STEPS`` maps each step's name to a function ``(source, contract) -> source``;
``contract`` holds the names the starter code fixes, which a working copy cannot change.
"""

from __future__ import annotations

import ast
import builtins
import hashlib

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
DEFS = (*SCOPES, ast.ClassDef)


def _new_name(name: str) -> str:
    return "q" + hashlib.sha256(name.encode()).hexdigest()[:6]


def rename(source: str, contract: frozenset[str]) -> str:
    """Every argument and local of every function, and every module-level function or
    class the starter code does not name, renamed; calls' keywords follow."""
    tree = ast.parse(source)
    keep = set(contract) | set(dir(builtins)) | {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep |= {(a.asname or a.name).split(".")[0] for a in node.names}
    chosen = {n.name for n in tree.body if isinstance(n, DEFS)} - keep
    for node in ast.walk(tree):
        if isinstance(node, SCOPES):
            chosen |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            chosen |= {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
    chosen -= keep
    params = {
        n.name: {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
        for n in tree.body
        if isinstance(n, SCOPES)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for keyword in node.keywords:
                if keyword.arg in params.get(node.func.id, ()) and keyword.arg in chosen:
                    keyword.arg = _new_name(keyword.arg)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in chosen:
            node.id = _new_name(node.id)
        elif isinstance(node, ast.arg) and node.arg in chosen:
            node.arg = _new_name(node.arg)
        elif isinstance(node, DEFS) and node.name in chosen:
            node.name = _new_name(node.name)
    return ast.unparse(tree) + "\n"


def reorder(source: str, contract: frozenset[str]) -> str:
    """Imports, functions and classes (and each class's methods) in reverse order."""
    tree = ast.parse(source)

    def reverse(body: list[ast.stmt]) -> list[ast.stmt]:
        movable = [
            i for i, s in enumerate(body) if isinstance(s, (*DEFS, ast.Import, ast.ImportFrom))
        ]
        moved = [body[i] for i in reversed(movable)]
        body = list(body)
        for i, stmt in zip(movable, moved):
            body[i] = stmt
        return body

    tree.body = reverse(tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = reverse(node.body)
    return ast.unparse(tree) + "\n"


def reformat(source: str, contract: frozenset[str]) -> str:
    """Comments gone, docstrings reworded, another layout: two-space indents, a blank
    line after every statement."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (*DEFS, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                first.value.value = "Written by me."
    lines = []
    for line in ast.unparse(tree).splitlines():
        stripped = line.lstrip(" ")
        lines.append(" " * ((len(line) - len(stripped)) // 2) + stripped)
        if not stripped.endswith(":") and stripped:
            lines.append("")
    return "\n".join(lines) + "\n"


class _Commute(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)):
            node.left, node.right = node.right, node.left
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values.reverse()
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node


def commute(source: str, contract: frozenset[str]) -> str:
    """The operands of every ``+ * & | ^ == !=``, ``and`` and ``or`` swapped."""
    return ast.unparse(_Commute().visit(ast.parse(source))) + "\n"


FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


class _Flip(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if all(type(op) in FLIP for op in node.ops):
            operands = [node.left, *node.comparators][::-1]
            node.left, node.comparators = operands[0], operands[1:]
            node.ops = [FLIP[type(op)]() for op in reversed(node.ops)]
        return node


def flip(source: str, contract: frozenset[str]) -> str:
    """Every ordering comparison written the other way round (``a < b`` as ``b > a``)."""
    return ast.unparse(_Flip().visit(ast.parse(source))) + "\n"


HARMLESS = [
    "pass",
    "None",
    "_unused_{n} = {n}",
    "if False:\n    _never_{n} = 0",
    "len(())",
    "'''{n}'''",
    "assert True",
]


def dead(source: str, contract: frozenset[str]) -> str:
    """One statement that does nothing after every statement, at every level (a rotating
    choice of ``HARMLESS``)."""
    tree = ast.parse(source)
    count = 0

    def pad(body: list[ast.stmt]) -> list[ast.stmt]:
        nonlocal count
        out = []
        for stmt in body:
            for name in ("body", "orelse", "finalbody"):
                block = getattr(stmt, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    setattr(stmt, name, pad(block))
            for handler in getattr(stmt, "handlers", []):
                handler.body = pad(handler.body)
            count += 1
            extra = ast.parse(HARMLESS[count % len(HARMLESS)].format(n=count)).body
            out += [stmt, *extra]
        return out

    tree.body = pad(tree.body)
    return ast.unparse(tree) + "\n"


def noisy(source: str, contract: frozenset[str]) -> str:
    """``print(end="")`` after every statement in every function: a statement with an
    effect (it writes nothing, but no reader of the text can rule that out)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, SCOPES):
            body = []
            for stmt in node.body:
                body += [stmt, ast.parse('print(end="")').body[0]]
            node.body = body
    return ast.unparse(tree) + "\n"


STEPS = {
    "rename": rename,
    "reorder": reorder,
    "reformat": reformat,
    "commute": commute,
    "flip": flip,
    "dead": dead,
}


def everything(source: str, contract: frozenset[str]) -> str:
    """Every step of ``STEPS``, one after the other."""
    for step in STEPS.values():
        source = step(source, contract)
    return source
