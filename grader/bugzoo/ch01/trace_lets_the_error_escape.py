"""The recorder is correct but the exception of a crashing fn escapes, so the trace of
the ops before the crash, the evidence, is lost."""

EXPECT = r"crash|completed before"
SELECT = "trace_shapes"


def trace_shapes(fn, *args):
    recorder = _ShapeRecorder()
    with recorder:
        fn(*args)
    return recorder.trace
