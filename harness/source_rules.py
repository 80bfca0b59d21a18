"""Rules about *how* a function computes its answer ("by hand": no library loss, no
broadcasting helper), judged from the submitted module's source where the tests judge.

A probe can switch library routines off and watch calls, but only in the process where
the student's code runs, after that code was imported: a reference kept at import time,
a call under ``torch._C.DisableTorchFunction()`` or a name the swap does not know gets
past it. ``judge`` reads the submission's text instead (``submitted_source``: in a
grading run the copy the grader gave the student's process, read by the trusted side
before that code ran; in a student's own pytest run the file the module loads from) and
follows in its AST what the judged function can reach:

- the function, and every module-level name it uses (functions, classes, values kept at
  import time), through each place that binds or changes that name: assignments,
  ``global`` writes in other functions, items or attributes set on it, its methods'
  arguments (``TABLE.update(f=...)``);
- what names stand for: imports and aliases (``import torch.nn.functional as F``,
  ``from x import y as z``, ``G = torch``), attribute chains, ``getattr`` with a constant
  name, ``__import__`` / ``importlib.import_module`` of a constant, ``vars(m)["x"]``.

In that reach it reports a name the rule forbids (for a rule that forbids a whole
library, any of its names but the few allowed), an attribute named like a forbidden
routine on any object (``logits.log_softmax``), a private part of torch or numpy
(``torch._C``), ``torch.ops``, ``torch.library``, ``torch.overrides``,
``DisableTorchFunction``, what the grader cannot follow (``getattr`` with a computed
name, ``eval``, ``globals()``, ``__dict__``, ``importlib``, ``pickle``, a module a
by-hand answer does not need) and a string or bytes constant naming a forbidden routine.
Anywhere in the module it reports what changes names behind the function's back:
setting an attribute of a library, writing ``globals()`` or a ``__dict__``, swapping a
function's ``__code__``, ``exec``, ``torch._C`` and ``torch.library``.

An over-approximation on purpose: a use in a branch that never runs still counts, and an
honest answer needs none of it. Importing a module for other functions is no use of it,
and plain type annotations are not read.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from dataclasses import dataclass, field

LIBRARIES = ("torch", "numpy")
# Modules a by-hand answer may use: the libraries (as far as the rule allows) and the
# standard library but for what runs, finds or rewrites code by a name or a string.
DANGEROUS_MODULES = set(
    "importlib pickle _pickle marshal ctypes _ctypes inspect gc builtins types pkgutil pydoc "
    "runpy code codeop copyreg shelve dbm zipimport os posix nt subprocess multiprocessing "
    "concurrent pty socket".split()
)
PLAIN_MODULES = (set(sys.stdlib_module_names) - DANGEROUS_MODULES) | {"torch", "numpy", "builtins"}
# Parts of torch and numpy that reach past their public functions, whatever the rule.
ESCAPES = (
    "torch.ops",
    "torch.library",
    "torch.overrides",
    "torch.jit",
    "torch.fx",
    "torch.hub",
    "torch.package",
    "torch.load",
    "torch.utils.cpp_extension",
    "numpy.load",
    "numpy.ctypeslib",
    "operator.attrgetter",
    "operator.methodcaller",
)
ESCAPE_ATTRS = {
    "DisableTorchFunction",
    "DisableTorchFunctionSubclass",
    "_disabled_torch_function_impl",
    "__torch_function__",
    "__torch_dispatch__",
}
# Attributes that read namespaces, code and classes past the names (in the judged reach),
# or, when written, change them (anywhere).
REFLECTIVE_ATTRS = set(
    "__dict__ __getattribute__ __getattr__ __setattr__ __delattr__ __class__ __bases__ "
    "__base__ __mro__ __subclasses__ __globals__ __code__ __closure__ __builtins__ "
    "__self__ __func__ __wrapped__ __loader__ __spec__ __import__ __reduce__ __reduce_ex__ "
    "__defaults__ __kwdefaults__ f_globals f_locals f_back f_builtins".split()
)
# ... and those whose every use, anywhere in the module, can change what a name means.
REWIRING_ATTRS = set("__dict__ __globals__ __code__ __closure__ __builtins__ f_globals".split())
REWIRING_MODULES = set("importlib pickle marshal ctypes gc dill cloudpickle".split())
REWIRING_NAMES = {
    *(f"builtins.{n}" for n in "globals vars locals eval exec compile __import__".split()),
    "builtins.__builtins__",
    "sys.modules",
    "sys._getframe",
    "sys.settrace",
    "sys.setprofile",
}
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.:]*")


@dataclass(frozen=True)
class Rule:
    """What a by-hand function may not reach, and what to tell a student who did."""

    forbidden: tuple[str, ...]  # dotted names (and everything under them)
    attrs: str  # regex: attribute names that name a forbidden routine on any object
    hint: str  # one sentence: what to do instead
    libraries: tuple[str, ...] = ()  # every name of these is forbidden ...
    allowed: tuple[str, ...] = ()  # ... but these
    pattern: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", re.compile(self.attrs, re.IGNORECASE))

    def forbids(self, dotted: str) -> bool:
        if any(dotted == f or dotted.startswith(f + ".") for f in self.forbidden):
            return True
        if dotted.split(".")[0] in self.libraries:
            return not any(dotted == a or dotted.startswith(a + ".") for a in self.allowed)
        return any(self.pattern.fullmatch(part) for part in dotted.split(".")[1:])


NO_LIBRARY_LOSS = Rule(
    forbidden=(
        "torch.nn.functional.cross_entropy",
        "torch.nn.functional.nll_loss",
        "torch.nn.functional.log_softmax",
        "torch.log_softmax",
        "torch.special.log_softmax",
        "torch.Tensor.log_softmax",
        "torch.nn.CrossEntropyLoss",
        "torch.nn.NLLLoss",
        "torch.nn.LogSoftmax",
        "torch.nn.modules.loss",
        "torch.distributions",  # a distribution's log_prob normalises the logits for you
    ),
    attrs=r"_*(log_?softmax\w*|nll_?loss\w*|\w*cross_?entropy\w*)",
    hint="write the loss as tensor arithmetic: shift each row by its max, log-sum-exp over the "
    "class axis, subtract the target's logit, average (torch.logsumexp is allowed)",
)
NO_BROADCAST_HELPER = Rule(
    forbidden=(),
    attrs=r"_*\w*broadcast\w*|as_strided|expand(_as)?|nditer",
    hint="apply the rule to the sizes yourself in plain Python: pad the shorter shape with "
    "1s on the left, then compare the sizes pair by pair from the right",
    libraries=LIBRARIES,
    allowed=("torch.Size",),
)


# Said when the source breaks a rule the probe in the student's process saw kept.
UNSEEN = (
    " (the probe that switches those routines off saw nothing in your code's process: a "
    "reference kept from import time, or calls hidden from torch's function modes, get "
    "past it, so the source decides)"
)


# ---- who binds what ----------------------------------------------------------------------


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign | ast.Delete):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
        return [node.target]
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def _value(node: ast.AST) -> ast.expr | None:
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
        return node.value
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return node.iter
    if isinstance(node, ast.withitem):
        return node.context_expr
    return None


def _base_name(node: ast.expr) -> ast.Name | None:
    """The name at the root of ``a.b[c].d(...)``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (ast.Module, *_DEFS)


def _scope(node: ast.AST):
    """The nodes of a scope's body that run in that scope: a nested definition's
    decorators, defaults and bases are, its body is not (it is a scope of its own)."""
    todo = list(node.body) if isinstance(node, _SCOPES) else [node]
    while todo:
        sub = todo.pop()
        yield sub
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
            todo += sub.decorator_list + sub.args.defaults
            todo += [d for d in sub.args.kw_defaults if d is not None]
        elif isinstance(sub, ast.ClassDef):
            todo += sub.decorator_list + sub.bases + [k.value for k in sub.keywords]
        else:
            todo += list(ast.iter_child_nodes(sub))


def _scopes(tree: ast.Module):
    """Every scope of the module (the module, each def and class), with the names its
    ``global`` statements declare."""
    for node in ast.walk(tree):
        if isinstance(node, _SCOPES):
            declared = {n for sub in _scope(node) if isinstance(sub, ast.Global) for n in sub.names}
            yield node, declared


class _Module:
    """Every import's alias, and who binds or changes each module-level name."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.imports: dict[str, set[str]] = {}  # alias -> dotted names
        self.stars: list[str] = []
        self.bindings: dict[str, list[ast.AST]] = {}  # name -> defs and bound expressions
        scopes = list(_scopes(tree))
        for scope, declared in scopes:
            for node in _scope(scope):
                self._imports(node)
                module_level = isinstance(scope, ast.Module)
                if isinstance(node, _DEFS) and (module_level or node.name in declared):
                    self.bindings.setdefault(node.name, []).append(node)
                value = _value(node)
                for target in _targets(node):
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name) and (module_level or sub.id in declared):
                            self.bindings.setdefault(sub.id, []).extend([value] if value else [])
        top = set(self.bindings)
        for scope, _ in scopes:  # changes to a module-level name's object, from anywhere
            for node in _scope(scope):
                for target, value in self._changes(node):
                    base = _base_name(target)
                    if base is not None and base.id in top and value is not None:
                        self.bindings[base.id].append(value)

    def _imports(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                dotted = alias.name if alias.asname else name
                self.imports.setdefault(name, set()).add(dotted)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name == "*":
                    self.stars.append(node.module)
                else:
                    dotted = f"{node.module}.{alias.name}"
                    self.imports.setdefault(alias.asname or alias.name, set()).add(dotted)

    @staticmethod
    def _changes(node: ast.AST):
        """(what is changed, the value put there): ``T[k] = v``, ``H.f = v``,
        ``T.update(v)``, ``setattr(H, k, v)``."""
        value = _value(node)
        for target in _targets(node):
            if isinstance(target, ast.Attribute | ast.Subscript):
                yield target, value
        if isinstance(node, ast.Call):
            args = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                for arg in args:
                    yield node.func.value, arg
            elif _calls(node, "setattr") and node.args:
                for arg in args[1:]:
                    yield node.args[0], arg


# ---- what the function reaches ------------------------------------------------------------


class _Judge:
    def __init__(self, source: str, rule: Rule, function: str) -> None:
        self.rule, self.function = rule, function
        self.mod = _Module(ast.parse(source))
        self.findings: dict[tuple[int, str], str] = {}
        self.used: set[str] = set()  # dotted names the judged function's reach uses
        self.patches: list[tuple[ast.AST, str, str]] = []  # (where, what it changes, how)
        self._busy: set[int] = set()

    def resolve(self, node: ast.AST) -> set[str]:
        """The dotted names (``torch.nn.functional.cross_entropy``) an expression may
        stand for; empty when it is none the module imported."""
        if id(node) in self._busy:
            return set()
        self._busy.add(id(node))
        try:
            return self._resolve(node)
        finally:
            self._busy.discard(id(node))

    def _resolve(self, node: ast.AST) -> set[str]:
        if isinstance(node, ast.Name):
            found = set(self.mod.imports.get(node.id, ()))
            for bound in self.mod.bindings.get(node.id, []):
                if isinstance(bound, ast.expr):
                    found |= self.resolve(bound)
            if node.id not in self.mod.imports and node.id not in self.mod.bindings:
                found |= {f"{m}.{node.id}" for m in self.mod.stars}
                if hasattr(builtins, node.id):
                    found.add(f"builtins.{node.id}")
            return found
        if isinstance(node, ast.Attribute):
            return {f"{d}.{node.attr}" for d in self.resolve(node.value)}
        if isinstance(node, ast.Subscript):
            key, inner = _constant_str(node.slice), node.value
            if key is not None and isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                return {f"{d}.{key}" for d in self.resolve(inner.value)}
            if key is not None and _calls(inner, "vars") and inner.args:
                return {f"{d}.{key}" for d in self.resolve(inner.args[0])}
            return set()
        if isinstance(node, ast.Call):
            if _calls(node, "getattr") and len(node.args) >= 2:
                key = _constant_str(node.args[1])
                if key is not None:
                    return {f"{d}.{key}" for d in self.resolve(node.args[0])}
            name = _constant_str(node.args[0]) if node.args else None
            if name and self.resolve(node.func) & {
                "builtins.__import__",
                "importlib.import_module",
            }:
                return {name, name.split(".")[0]}
            return set()
        if isinstance(node, ast.IfExp):
            return self.resolve(node.body) | self.resolve(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.resolve(v) for v in node.values))
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value)
        return set()

    def note(self, node: ast.AST, text: str, subject: str = "") -> None:
        """One finding: ``subject`` (a dotted name, ``.attr`` or "") and what it means."""
        line = getattr(node, "lineno", 0)
        self.findings.setdefault((line, subject or text), f"line {line}: {text}")

    def report(self) -> list[str]:
        """The findings by line, each line's most specific name only (``torch._C._nn.
        cross_entropy_loss``, not also ``torch._C`` and ``.cross_entropy_loss``)."""
        keys = sorted(self.findings)
        kept = []
        for line, subject in keys:
            wider = any(
                other != subject
                and (
                    other.startswith(subject + ".")
                    or subject.startswith(".")
                    and other.endswith(subject)
                )
                for at, other in keys
                if at == line
            )
            if not wider:
                kept.append(self.findings[line, subject])
        return kept

    def check_name(self, node: ast.AST, dotted: str, full: bool, alias: str = "") -> None:
        """A name the code uses: ``full`` in the judged function's reach, else anywhere
        (``alias``: the module's own name that stands for it)."""
        findings = len(self.findings)
        self._check_name(node, dotted, full)
        if alias and alias not in (dotted, dotted.split(".")[0]) and len(self.findings) > findings:
            key = list(self.findings)[-1]
            self.findings[key] += f" (as {alias})"

    def _check_name(self, node: ast.AST, dotted: str, full: bool) -> None:
        if full:
            self.used.add(dotted)
        parts = dotted.split(".")
        root = parts[0]
        private = root in LIBRARIES and any(
            p.startswith("_") and not p.startswith("__") for p in parts
        )
        escape = any(dotted == e or dotted.startswith(e + ".") for e in ESCAPES)
        builtin_reflection = root == "builtins" and parts[-1] in (
            "setattr delattr vars globals locals eval exec compile __import__ __builtins__".split()
        )
        if not full:
            if dotted.startswith(("torch._C", "torch._ops", "torch.library", "torch.ops")):
                self.note(
                    node, f"uses {dotted}, which reaches past torch's public functions", dotted
                )
            elif dotted in REWIRING_NAMES or root in REWIRING_MODULES:
                self.note(
                    node, f"uses {dotted}, which can change what the module's names mean", dotted
                )
        elif self.rule.forbids(dotted):
            self.note(node, f"uses {dotted}", dotted)
        elif private:
            self.note(node, f"uses {dotted}, a private part of {root}", dotted)
        elif escape:
            self.note(
                node, f"uses {dotted}, which reaches past the library's public functions", dotted
            )
        elif (
            builtin_reflection
            or dotted in REWIRING_NAMES
            or root in DANGEROUS_MODULES - {"builtins"}
        ):
            self.note(node, f"uses {dotted}, which the grader cannot follow", dotted)
        elif root == "builtins" and isinstance(node, ast.Attribute):  # ``builtins.getattr``
            self.note(node, f"uses {dotted} through the builtins module", dotted)
        elif root not in PLAIN_MODULES:
            self.note(
                node, f"uses {dotted} (module {root}), which a by-hand answer does not need", dotted
            )

    def scan(self, node: ast.AST, full: bool) -> list[ast.AST]:
        """Report what ``node``'s code uses; return the module-level definitions and
        values it reaches (scanned in turn when ``full``)."""
        more: list[ast.AST] = []
        nodes = list(_code(node))
        # ``torch.Size`` is judged as a whole, not also as ``torch``
        prefixes = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        for sub in nodes:
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                more += self.mod.bindings.get(sub.id, [])
                for dotted in self.resolve(sub) if id(sub) not in prefixes else ():
                    self.check_name(sub, dotted, full, alias=sub.id)
                if full and sub.id == "getattr" and not _constant_getattr(sub, node):
                    self.note(sub, "getattr with a name computed at run time, which the grader "
                              "cannot follow")  # fmt: skip
            elif isinstance(sub, ast.Attribute):
                self.check_attribute(sub, full, whole=id(sub) not in prefixes)
            elif isinstance(sub, ast.Call) and _calls(sub, "getattr") and len(sub.args) >= 2:
                key = _constant_str(sub.args[1])
                if full and key is not None and self.rule.pattern.fullmatch(key):
                    self.note(sub, f"uses .{key} (through getattr)")
            elif isinstance(sub, ast.Constant) and full:
                self.check_constant(sub)
        return more

    def check_attribute(self, sub: ast.Attribute, full: bool, whole: bool = True) -> None:
        writes = isinstance(sub.ctx, ast.Store | ast.Del)
        if full and self.rule.pattern.fullmatch(sub.attr):
            self.note(sub, f"uses .{sub.attr}", "." + sub.attr)
        if sub.attr in ESCAPE_ATTRS:
            self.note(sub, f"uses .{sub.attr}, which hides calls from the tests", "." + sub.attr)
        elif sub.attr in REWIRING_ATTRS or sub.attr in REFLECTIVE_ATTRS and (full or writes):
            self.note(sub, f"uses .{sub.attr}, which the grader cannot follow", "." + sub.attr)
        for dotted in self.resolve(sub) if whole else ():
            self.check_name(sub, dotted, full)
            if writes:
                self.patches.append((sub, dotted, "changes"))

    def check_constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bytes):
            text = value.decode("latin-1")
            if self.rule.pattern.search(text) or "_C" in text:
                self.note(node, "a bytes constant that names a library routine")
        elif isinstance(value, str) and _IDENTIFIER.fullmatch(value):
            parts = re.split(r"[.:]", value)
            named = any(self.rule.pattern.fullmatch(p) for p in parts)
            if named or parts[0] in LIBRARIES and (self.rule.forbids(value) or "_C" in parts):
                self.note(node, f"names {value!r} in a string")

    def outside_writes(self) -> None:
        """Anywhere in the module: ``lib.__dict__[k] = v``, ``torch.x[k] = v``,
        ``setattr(torch, k, v)``, ``delattr(F, k)`` (with the attribute stores ``scan``
        saw): each is reported when it changes a name the judged function uses, or
        one under it, or one above it."""
        for node in ast.walk(self.mod.tree):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                key = _constant_str(node.slice)
                for dotted in self.resolve(node.value):
                    self.patches.append((node, f"{dotted}.{key}" if key else dotted, "changes"))
            elif (_calls(node, "setattr") or _calls(node, "delattr")) and node.args:
                key = _constant_str(node.args[1]) if len(node.args) > 1 else None
                for dotted in self.resolve(node.args[0]):
                    self.patches.append((node, f"{dotted}.{key}" if key else dotted, "changes"))
        for node, target, how in self.patches:
            if any(
                u == target or u.startswith(target + ".") or target.startswith(u + ".")
                for u in self.used
            ):
                self.note(node, f"{how} {target}, which {self.function} uses", target)


def _code(node: ast.AST):
    """``ast.walk`` without plain type annotations (never run, or run only to name types)."""
    todo = [node]
    while todo:
        sub = todo.pop()
        yield sub
        for name, child in ast.iter_fields(sub):
            if name in ("annotation", "returns") and _plain_type(child):
                continue
            if isinstance(child, list):
                todo += [c for c in child if isinstance(c, ast.AST)]
            elif isinstance(child, ast.AST):
                todo.append(child)


def _plain_type(node: ast.AST | None) -> bool:
    """An annotation that only names types (``torch.Tensor``, ``tuple[int, ...] | None``)."""
    kinds = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.List)
    plain = kinds + (ast.BinOp, ast.BitOr, ast.expr_context)
    return node is None or all(isinstance(n, plain) for n in ast.walk(node))


def _constant_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _calls(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _constant_getattr(name: ast.Name, root: ast.AST) -> bool:
    """``getattr`` called with a constant name (not passed around, not computed)."""
    for call in ast.walk(root):
        if isinstance(call, ast.Call) and call.func is name:
            return len(call.args) >= 2 and _constant_str(call.args[1]) is not None
    return False


# ---- the rule -----------------------------------------------------------------------------


def judge(source: str, function: str, rule: Rule, limit: int = 4) -> list[str]:
    """Why ``function`` of the module whose text is ``source`` may break ``rule``: one
    line per finding (``line 12: uses torch._C._nn.cross_entropy_loss``), the first
    ``limit`` by line; [] when nothing was found."""
    try:
        j = _Judge(source, rule, function)
    except (SyntaxError, ValueError) as exc:
        return [f"the module's source could not be read ({type(exc).__name__})"]
    start: list[ast.AST] = list(j.mod.bindings.get(function, []))
    for dotted in j.mod.imports.get(function, ()):
        j.check_name(j.mod.tree, dotted, full=True)
    if not start and function not in j.mod.imports:
        return [f"{function} is not defined by a def or an assignment the grader can read"]
    todo, seen = start, set()
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            todo += j.scan(node, full=True)
    j.scan(j.mod.tree, full=False)  # what any code of the module does behind the names
    j.outside_writes()
    found = j.report()
    return found[:limit] + ([f"and {len(found) - limit} more"] if len(found) > limit else [])


def submitted_source(chapter: str, module: str) -> str | None:
    """The text of the submission's ``chapter/module.py`` as the tests' side has it: in
    a grading run the copy the grader gave the student's process (read by the trusted
    side before any of that code ran), in a student's own pytest run the file the module
    loads from. None when there is none."""
    from harness import probe, target

    transport = probe.current()
    if isinstance(transport, probe.StudentSide):
        raise RuntimeError("course bug: a submission's source is judged on the tests' side")
    reader = getattr(transport, "submitted_source", None)
    if reader is not None:
        return reader(chapter, module)
    try:
        return target.module_path(chapter, module).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def broken(chapter: str, module: str, function: str, rule: Rule) -> str | None:
    """Why ``function`` of the submission breaks ``rule``, in one message; None if it
    does not (or there is no source to read)."""
    source = submitted_source(chapter, module)
    if source is None:
        return None
    found = judge(source, function, rule)
    if not found:
        return None
    return f"{function} as written in {chapter}/{module}.py: " + "; ".join(found)
