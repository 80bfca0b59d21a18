"""The transfer setup prepared on a deep copy of the pretrained model, as diagnose leaves
the caller's objects untouched: the copy is frozen, gets the fresh head and is returned
with its optimizer, while the caller's model keeps trainable features and its old head.
The contract prepares the model it is given and returns that model."""

import copy as _copy

EXPECT = r"returned another model than the one it was given"
SELECT = "sgd_at_lr"
TASK = "ch08.1"

_solution_build_transfer_setup = build_transfer_setup


def build_transfer_setup(model):
    return _solution_build_transfer_setup(_copy.deepcopy(model))
