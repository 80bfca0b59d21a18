"""What a task's contract allows beyond the invariants every call keeps (``harness.invariants``).

By default a call into the student's code only reads what its caller passed in, leaves
global state as it found it, writes no file but the paths it was given, and returns
objects of its own. A contract that says otherwise is written here, once, keyed by
``"chNN.name"`` (the chapter and the name the tests reach):

- ``changes``: parameters the call changes in place (``sgd_step`` updates the parameters
  it is given; a name ending in ``_`` says so in PyTorch's own convention), or only the
  gradients under one (``model.grad``), or only the values of the tensors under one
  (``model.values``: its modules, train/eval modes and tensors' identity stay);
- ``aliases``: parameters whose memory the result may share (a view of an input, the
  caller's module inside the model it returns);
- ``state``: global state the call may change (``"random"``: it seeds or draws from the
  global generators, as ``seed_worker`` exists to do);
- ``repeats``: the call may hand out the same object on every call;
- ``generator``: the parameter through which the caller may pass a generator: once one is
  given, drawing from the global generators is no longer allowed;
- ``layouts=False``: the result may depend on how the arguments lie in memory (a task
  about strides or views); by default the same values in any layout give the same result;
- ``batch``: parameters whose first dimension is a batch of independent examples, in
  order (``"q k v mask?"``: a name ending in ``?`` may also be broadcast over the batch),
  with ``batch_from`` the dims the first needs for its first to be a batch: the last
  example alone must give the last row of the batch's result (``harness.batches``);
- ``callbacks=False``: the functions the caller passes in are handed over as they are; by
  default each is wrapped to check it runs in the caller's grad mode (not under a
  ``no_grad`` the call set up), which a task that compiles or inspects the frames of the
  function it is given must not see;
- ``modes=True``: a module's ``forward`` may compute another function in training mode
  than in eval mode (batch statistics); by default it computes the same in both, and
  draws no random numbers (no dropout: no contract here asks for one). Such a module's
  ``batch`` holds in eval mode only: in training its examples share the batch's statistics.

The table is immutable: the student's process holds a copy of it (the harness runs
there too), and nothing there may loosen what the tests demand.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Allow:
    """What one task's contract allows (see module doc); the default allows nothing."""

    changes: frozenset[str] = frozenset()
    aliases: frozenset[str] = frozenset()
    state: frozenset[str] = frozenset()
    repeats: bool = False
    generator: str = ""  # a parameter: once given a generator, the call draws from it alone
    methods: bool = True  # a class: check its methods' calls too
    layouts: bool = True  # the result may not depend on the arguments' memory layout
    batch: tuple[str, ...] = ()  # parameters batched along their first dim (see module doc)
    batch_from: int = 1  # the dims the first batched parameter needs to hold a batch
    modes: bool = False  # a module's forward may depend on train/eval mode
    callbacks: bool = True  # the caller's functions are watched (see module doc)
    why: str = ""


NOTHING = Allow()
_BATCHED = "computes each example of the batch on its own"


def _allow(
    changes="",
    aliases="",
    state="",
    repeats=False,
    generator="",
    methods=True,
    layouts=True,
    batch="",
    batch_from=1,
    modes=False,
    callbacks=True,
    why="",
) -> Allow:
    return Allow(
        frozenset(changes.split()),
        frozenset(aliases.split()),
        frozenset(state.split()),
        repeats,
        generator,
        methods,
        layouts,
        tuple(batch.split()),
        batch_from,
        modes,
        callbacks,
        why,
    )


ALLOWED = MappingProxyType(
    {
        # ch01
        "ch01.is_view_of": _allow(
            layouts=False, why="asks whether two tensors share memory: memory is its subject"
        ),
        "ch01.standardize_channels_": _allow(
            changes="x", aliases="x", why="standardizes x in place and returns it (the _ says so)"
        ),
        "ch01.pairwise_sq_dists": _allow(
            batch="x", batch_from=2, why="row i is x[i] against every y"
        ),
        "ch01.batch_linear": _allow(batch="x", batch_from=2, why=_BATCHED),
        # ch02
        "ch02.find_graph_cuts": _allow(
            changes="args", why="runs the caller's fn on args; what fn does to them is its own"
        ),
        "ch02.first_stage": _allow(changes="log", why="appends a copy of its output to log"),
        "ch02.accumulated_grad": _allow(
            changes="model.grad", why="leaves the accumulated gradient in each parameter's .grad"
        ),
        # ch03
        "ch03.sgd_step": _allow(changes="params", why="updates the parameters in place"),
        # ch04
        "ch04.xor_data": _allow(
            state="random", why="given code: seeds the global generator, as the book does"
        ),
        "ch04.load_checkpoint": _allow(
            changes="model.values optimizer",
            why="restores the file into model's parameters and buffers and into optimizer "
            "(the model's modules and train/eval modes stay the caller's)",
        ),
        "ch04.Block.forward": _allow(batch="x", batch_from=2, why=_BATCHED),
        "ch04.Encoder.forward": _allow(batch="x", batch_from=2, why=_BATCHED),
        "ch04.Classifier.forward": _allow(batch="x", batch_from=2, why=_BATCHED),
        "ch04.RunningNorm.forward": _allow(
            batch="x",
            batch_from=2,
            modes=True,
            why="normalizes by the batch's statistics in training and by the stored ones in "
            "eval mode, as BatchNorm does; in eval mode each example uses the stored statistics "
            "(in training the call changes the buffers and is not repeated)",
        ),
        # ch05
        "ch05.seed_worker": _allow(state="random", why="reseeds the worker's global generators"),
        "ch05.time_loader": _allow(
            state="random",
            why="iterating a DataLoader that shuffles draws its seed from the global generator",
        ),
        # ch05a
        "ch05a.train_with_pipeline": _allow(
            state="random",
            why="builds its model from the global generator seeded with seed, so runs with and "
            "without scaling start from the same weights",
        ),
        "ch05a.Normalizer.apply": _allow(batch="x", batch_from=2, why=_BATCHED),
        "ch05a.flip_with_label": _allow(
            aliases="label", why="a label the mirror leaves alone may come back as it was given"
        ),
        # ch06
        "ch06.to_channels_first": _allow(
            aliases="x", batch="x", batch_from=4, why="a permuted view of x is the answer"
        ),
        "ch06.SmallCNN.forward": _allow(batch="x", batch_from=4, why=_BATCHED),
        "ch06.ChannelsLastConv.forward": _allow(batch="images", batch_from=4, why=_BATCHED),
        # ch06a
        "ch06a.distance_concentration": _allow(
            state="random", generator="generator", why="the global generator when none is given"
        ),
        "ch06a.sequence_scores": _allow(batch="x mask", batch_from=3, why=_BATCHED),
        "ch06a.train_linear_svm": _allow(
            layouts=False,
            why="an approximate minimizer: where the optimum is flat, the rounding of another "
            "layout moves (w, b) along it; a hidden test compares the objective reached instead",
        ),
        "ch06a.hinge_loss": _allow(
            batch="scores y", why="per example; a reduced loss has no batch dim to compare"
        ),
        # ch07
        "ch07.split_heads": _allow(
            aliases="x", batch="x", batch_from=3, why="a view of x (view + transpose)"
        ),
        "ch07.merge_heads": _allow(
            aliases="x", batch="x", batch_from=4, why="may be a view of x where memory allows"
        ),
        "ch07.attention_weights": _allow(batch="q k mask?", batch_from=3, why=_BATCHED),
        "ch07.attention": _allow(batch="q k v mask?", batch_from=3, why=_BATCHED),
        "ch07.MultiHeadSelfAttention.forward": _allow(batch="x", batch_from=3, why=_BATCHED),
        # ch08
        "ch08.build_transfer_setup": _allow(
            changes="model",
            aliases="model",
            state="random",
            why="freezes the caller's model and gives it a fresh head (initialised from the "
            "global generator, as nn.Linear does), then returns that model",
        ),
        "ch08.TransferNet.forward": _allow(batch="x", batch_from=2, why=_BATCHED),
        "ch08.overfit_one_batch": _allow(changes="model", why="trains model in place"),
        "ch08.train_steps": _allow(
            changes="model optimizer", why="given code: trains model with optimizer"
        ),
        # ch09a: compiled by the tests; a wrapper around forward would be compiled with it
        "ch09a.CausalTagger": _allow(methods=False, why="compiled: Dynamo would trace the check"),
        "ch09a.NormalizedGate": _allow(methods=False, why="compiled: Dynamo would trace the check"),
        # ch09b
        "ch09b.make_run": _allow(
            state="random", why="seeds torch's global state with seed before building the model"
        ),
        "ch09a.compile_stats": _allow(
            callbacks=False, why="compiles fn: Dynamo reads the very function it is given"
        ),
        "ch09a.guard_reasons": _allow(
            callbacks=False, why="compiles fn and reads its guards, named after fn's own arguments"
        ),
        "ch09a.serve": _allow(
            callbacks=False, why="compiles through the backend it is given, as given"
        ),
        # ch10
        "ch10.get_batch": _allow(
            state="random", generator="generator", why="the global generator when none is given"
        ),
        "ch10.generate": _allow(
            aliases="idx",
            state="random",
            generator="generator",
            why="with max_new_tokens=0, idx itself is the whole answer; samples from the global "
            "generator when none is given",
        ),
        "ch10.CausalSelfAttention.forward": _allow(batch="x", batch_from=3, why=_BATCHED),
        "ch10.Block.forward": _allow(batch="x", batch_from=3, why=_BATCHED),
        "ch10.GPT.forward": _allow(
            batch="idx targets?", batch_from=2, why="logits per example; the loss is a mean"
        ),
        "ch10.train_gpt": _allow(
            state="random", why="deterministic for a given seed: seeds the global generator"
        ),
    }
)


def allowed(chapter: str, name: str) -> Allow:
    """The exceptions ``chapter``'s ``name`` may take (``NOTHING`` unless listed)."""
    return ALLOWED.get(f"{chapter}.{name}", NOTHING)
