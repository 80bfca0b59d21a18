""" "By hand" rules judged from the submitted source (``harness.source_rules``): every way
we know of reaching a library loss or a broadcasting helper is found, with its line,
and an honest module — whatever else it imports and uses elsewhere — is not refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness import source_rules
from harness.source_rules import NO_BROADCAST_HELPER, NO_LIBRARY_LOSS, judge
from harness.target import REPO

CE = source_rules.NO_LIBRARY_LOSS
HONEST_CE = """
import torch

def cross_entropy(logits, targets):
    shift = logits.max(dim=1, keepdim=True).values
    z = logits - shift
    return (torch.logsumexp(z, dim=1) - z.gather(1, targets[:, None]).squeeze(1)).mean()
"""


def module(*parts: str) -> str:
    return "\n".join(textwrap.dedent(p) for p in parts)


def test_the_references_and_every_alternative_are_not_refused():
    for chapter, function, rule in (
        ("ch01", "broadcast_shape", NO_BROADCAST_HELPER),
        ("ch03", "cross_entropy", NO_LIBRARY_LOSS),
    ):
        name = {"ch01": "shapes", "ch03": "manual_mlp"}[chapter]
        solution = (REPO / "solutions" / chapter / f"{name}.py").read_text()
        assert judge(solution, function, rule) == [], chapter
        for alternative in sorted((REPO / "grader/alternatives" / chapter).glob("*.py")):
            text = f"{solution}\n{alternative.read_text()}"
            assert judge(text, function, rule) == [], alternative.name


@pytest.mark.parametrize(
    "extra",
    [
        "import torch.nn.functional as F\n\ndef forward(x):\n    return F.relu(x)\n",
        "import torch.nn.functional as F\n\ndef val_loss(z, y):\n    return F.cross_entropy(z, y)\n",
        "from torch.nn.functional import cross_entropy as library_ce\n\n"
        "def check(z, y):\n    return library_ce(z, y)\n",
        "LIBRARY = torch.nn.functional.cross_entropy\n",  # kept at import, never reached
        "def report(msg):\n    raise ValueError('cross_entropy needs 2-d logits, got ' + msg)\n",
        "import sys, math\nEPS = sys.float_info.epsilon * math.e\n",
    ],
)
def test_library_losses_used_only_elsewhere_are_not_refused(extra):
    assert judge(module(HONEST_CE, extra), "cross_entropy", CE) == []
    uses_it = HONEST_CE.replace(".mean()", ".mean() + 0 * EPS") if "EPS" in extra else HONEST_CE
    assert judge(module(uses_it, extra), "cross_entropy", CE) == [], "the standard library is fine"


def test_a_helper_of_the_students_own_may_bear_a_library_name():
    own = (
        "import torch\nimport torch.nn.functional as F\n"
        "def log_softmax(z):\n    return z - torch.logsumexp(z, 1, keepdim=True)\n"
        "def cross_entropy(z, t):\n"
        "    return -(log_softmax(z) * F.one_hot(t, z.shape[1])).sum(1).mean()\n"
    )
    assert judge(own, "cross_entropy", CE) == []


REACHES = {
    "direct": "import torch.nn.functional as F\n"
    "def cross_entropy(z, t):\n    return F.cross_entropy(z, t)\n",
    "from-import alias": "from torch.nn.functional import nll_loss as nl\n"
    "def cross_entropy(z, t):\n    return nl(z.exp().log(), t)\n",
    "module alias": "import torch\nT = torch\n"
    "def cross_entropy(z, t):\n    return T.nn.functional.cross_entropy(z, t)\n",
    "method": "def cross_entropy(z, t):\n    return -z.log_softmax(1)[range(len(t)), t].mean()\n",
    "kept at import under DisableTorchFunction": "import torch\n"
    "_k = torch._C._nn.cross_entropy_loss\n"
    "def cross_entropy(z, t):\n    with torch._C.DisableTorchFunction():\n"
    "        return _k(z, t, None, 1, -100, 0.0)\n",
    "set by another function": "import torch\n_h = None\n"
    "def init():\n    global _h\n    _h = torch.nn.functional.cross_entropy\n"
    "def cross_entropy(z, t):\n    return _h(z, t)\n",
    "put in a table": "import torch\nTABLE = {}\n"
    "def init():\n    TABLE.update(f=torch.special.log_softmax)\n"
    "def cross_entropy(z, t):\n    return -TABLE['f'](z, 1)[range(len(t)), t].mean()\n",
    "class attribute": "import torch\nclass H:\n    f = staticmethod(torch.log_softmax)\n"
    "def cross_entropy(z, t):\n    return -H.f(z, 1)[range(len(t)), t].mean()\n",
    "default argument": "import torch.nn.functional as F\n"
    "def cross_entropy(z, t, _f=F.cross_entropy):\n    return _f(z, t)\n",
    "getattr, constant": "import torch\n"
    "def cross_entropy(z, t):\n    return getattr(torch.nn.functional, 'cross_entropy')(z, t)\n",
    "getattr, computed": "import torch\n"
    "def cross_entropy(z, t):\n    return getattr(torch.nn.functional, 'cross' + '_entropy')(z, t)\n",
    "vars": "import torch.nn.functional as F\n"
    "def cross_entropy(z, t):\n    return vars(F)['cross_entropy'](z, t)\n",
    "__dict__": "import torch.nn.functional as F\n"
    "def cross_entropy(z, t):\n    return F.__dict__['nll_loss'](z, t)\n",
    "importlib": "import importlib\n"
    "def cross_entropy(z, t):\n"
    "    return importlib.import_module('torch.nn.functional').cross_entropy(z, t)\n",
    "__import__": "def cross_entropy(z, t):\n"
    "    return __import__('torch.nn.functional').nn.functional.cross_entropy(z, t)\n",
    "eval": "import torch\ndef cross_entropy(z, t):\n    return eval('torch.nn.functional.' + 'cross_entropy')(z, t)\n",
    "torch.ops": "import torch\n"
    "def cross_entropy(z, t):\n    return torch.ops.aten._log_softmax(z, 1, False).neg().mean()\n",
    "methodcaller": "import operator\n"
    "def cross_entropy(z, t):\n    return operator.methodcaller('log_' + 'softmax', 1)(z).mean()\n",
    "reduce over getattr": "import functools, torch\n"
    "def cross_entropy(z, t):\n    f = functools.reduce(getattr, ['nn', 'functional', 'nll_loss'], torch)\n"
    "    return f(z, t)\n",
    "a distribution": "import torch\n"
    "def cross_entropy(z, t):\n"
    "    return -torch.distributions.Categorical(logits=z).log_prob(t).mean()\n",
    "star import": "from torch.nn.functional import *\n"
    "def cross_entropy(z, t):\n    return nll_loss(log_softmax(z, 1), t)\n",
    "pickle": "import pickle\n"
    "def cross_entropy(z, t):\n"
    "    return pickle.loads(b'ctorch.nn.functional\\ncross_entropy\\n.')(z, t)\n",
    "torch patched at import": "import torch, torch.nn.functional as F\n"
    "torch.logsumexp = F.cross_entropy\n"
    "def cross_entropy(z, t):\n    return torch.logsumexp(z, t)\n",
    "torch patched through setattr": "import torch, torch.nn.functional as F\n"
    "def init():\n    setattr(torch, 'logsumexp', F.cross_entropy)\n"
    "def cross_entropy(z, t):\n    return torch.logsumexp(z, t)\n",
    "globals written": "import torch\n"
    "def init():\n    globals()['helper'] = torch.nn.functional.cross_entropy\n"
    "def cross_entropy(z, t):\n    return helper(z, t)\n",
    "a kernel registered": "import torch\n"
    "_lib = torch.library.Library('aten', 'IMPL')\n"
    "def cross_entropy(z, t):\n    return torch.logsumexp(z, 1).mean()\n",
    "a function's code swapped": "import torch\n"
    "def _impostor(z, t):\n    return z\n"
    "def cross_entropy(z, t):\n    return torch.logsumexp(z, 1).mean()\n"
    "cross_entropy.__code__ = _impostor.__code__\n",
    "imported under the task's name": "from torch.nn.functional import cross_entropy\n",
    "assigned under the task's name": "import torch\ncross_entropy = torch.nn.CrossEntropyLoss()\n",
    "exec": "exec('def cross_entropy(z, t):\\n    import torch\\n    return 0\\n')\n",
    "sys.modules": "import sys\n"
    "def cross_entropy(z, t):\n    return sys.modules['torch'].nn.functional.nll_loss(z, t)\n",
    "the builtins module": "import builtins, torch\n"
    "def cross_entropy(z, t):\n    return builtins.getattr(torch, 'log_' + 'softmax')(z, 1)\n",
    "gc": "import gc\n"
    "def cross_entropy(z, t):\n    return [f for f in gc.get_objects() if callable(f)][0](z, t)\n",
    "another process": "import subprocess\n"
    "def cross_entropy(z, t):\n    return float(subprocess.check_output(['python', '-c', '1']))\n",
    "a module it wrote": "def cross_entropy(z, t):\n    import helper_written_at_import\n"
    "    return helper_written_at_import.loss(z, t)\n",
}


@pytest.mark.parametrize("how", sorted(REACHES))
def test_every_way_of_reaching_a_library_loss_is_found(how):
    found = judge(REACHES[how], "cross_entropy", CE)
    assert found, f"{how}: nothing found in\n{REACHES[how]}"
    assert all(f.startswith("line ") or "not defined" in f or "more" in f for f in found), found


def test_a_finding_names_the_line_and_the_library_name():
    found = judge(REACHES["kept at import under DisableTorchFunction"], "cross_entropy", CE)
    assert "line 2: uses torch._C._nn.cross_entropy_loss" in found, found
    assert any("line 5" in f and "(as _k)" in f for f in found), found


BROADCASTS = {
    "torch.broadcast_shapes": "import torch\n"
    "def broadcast_shape(a, b):\n    return tuple(torch.broadcast_shapes(a, b))\n",
    "numpy kept at import": "import numpy as np\n_b = np.broadcast\n"
    "def broadcast_shape(a, b):\n    return _b(np.empty(a), np.empty(b)).shape\n",
    "numpy arithmetic": "import numpy as np\n"
    "def broadcast_shape(a, b):\n    return (np.zeros(a) + np.zeros(b)).shape\n",
    "torch's private reference": "import torch._refs\n"
    "def broadcast_shape(a, b):\n    return tuple(torch._refs._broadcast_shapes(a, b))\n",
    "torch.functional": "import torch.functional as tf\n"
    "def broadcast_shape(a, b):\n    return tuple(tf.broadcast_shapes(a, b))\n",
    "tensors broadcast": "import torch\n"
    "def broadcast_shape(a, b):\n    return tuple((torch.empty(a) + torch.empty(b)).shape)\n",
}
HONEST_BROADCAST = """
import itertools
import numpy as np
import torch

def broadcast_shape(a: torch.Size | tuple, b: "np.ndarray") -> tuple[int, ...]:
    out = []
    for i, (x, y) in enumerate(itertools.zip_longest(reversed(a), reversed(b), fillvalue=1)):
        if x != y and 1 not in (x, y):
            raise ValueError(f"dimension {i}: {x} vs {y}")
        out.append(y if x == 1 else x)
    return tuple(torch.Size(reversed(out)))

def pairwise(x, y):
    return np.broadcast_to(x, y.shape) + torch.broadcast_shapes((1,), (2,))[0]
"""


@pytest.mark.parametrize("how", sorted(BROADCASTS))
def test_every_way_of_reaching_a_broadcasting_helper_is_found(how):
    assert judge(BROADCASTS[how], "broadcast_shape", NO_BROADCAST_HELPER), how


def test_plain_python_on_sizes_is_by_hand_whatever_else_the_module_uses():
    assert judge(HONEST_BROADCAST, "broadcast_shape", NO_BROADCAST_HELPER) == []


def test_unreadable_source_breaks_the_rule():
    assert judge("def cross_entropy(:\n", "cross_entropy", CE)


# ---- where the source comes from ----------------------------------------------------------


def test_in_a_students_own_run_the_source_is_the_file_the_module_loads_from(tmp_path):
    from harness import target

    (tmp_path / "ch03").mkdir()
    (tmp_path / "ch03" / "manual_mlp.py").write_text(REACHES["direct"])
    saved = target.current_root()
    target.set_root(tmp_path)
    try:
        assert source_rules.submitted_source("ch03", "manual_mlp") == REACHES["direct"]
        why = source_rules.broken("ch03", "manual_mlp", "cross_entropy", CE)
    finally:
        target.set_root(saved)
    assert why.startswith("cross_entropy as written in ch03/manual_mlp.py: line 3:"), why


def test_in_a_grading_run_the_trusted_side_keeps_the_copy_it_read_before_any_code_ran(tmp_path):
    from grader.verdict import SplitTransport
    from harness import probe

    for phase in ("public", "hidden"):
        (tmp_path / phase / "impl" / "ch03").mkdir(parents=True)
        path = tmp_path / phase / "impl" / "ch03" / "manual_mlp.py"
        path.write_text(REACHES["direct"])
    config = {"students": {f"ch03-{p}": str(tmp_path / p) for p in ("public", "hidden")},
              "modules": {"ch03": "manual_mlp"}, "test_timeout": 1,
              "log": str(tmp_path / "log"), "work": str(tmp_path)}  # fmt: skip
    transport = SplitTransport(client=None, config=config)
    for phase in ("public", "hidden"):  # the student's process rewrites its file later
        Path(tmp_path / phase / "impl/ch03/manual_mlp.py").write_text(HONEST_CE)
    saved = probe.current()
    probe.use(transport)
    try:
        assert source_rules.submitted_source("ch03", "manual_mlp") == REACHES["direct"]
        assert source_rules.broken("ch03", "manual_mlp", "cross_entropy", CE)
    finally:
        probe.use(saved)


def test_the_students_side_never_judges():
    from harness import probe

    saved = probe.current()
    probe.use(probe.StudentSide())
    try:
        with pytest.raises(RuntimeError, match="tests' side"):
            source_rules.submitted_source("ch03", "manual_mlp")
    finally:
        probe.use(saved)
