#!/usr/bin/env bash
# The CUDA-marked tests (ch07, ch09), as one short script for a machine with a GPU.
# Elsewhere these tests are skipped and reported "not graded here". Uses the python and
# the CUDA build of torch already installed on that machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python3 || command -v python)}"
"$PY" - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device here: nothing to check"
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
PY
"$PY" -m pytest exercises grader/hidden --impl solutions -m cuda -v -p no:cacheprovider -rs "$@"
