"""A numpy array counts as a cut only in float32, the dtype a model's tensors usually have:
h.double().numpy(force=True) and h.half().numpy(force=True) go unreported."""

EXPECT = r"numpy"
SELECT = "generated_programs"


def _carries_values(obj):
    if isinstance(obj, Tensor):
        return obj.is_floating_point() or obj.is_complex()
    if isinstance(obj, float):
        return True
    if isinstance(obj, np.ndarray):
        return obj.dtype == np.float32
    if isinstance(obj, (list, tuple)):
        return any(_carries_values(o) for o in obj)
    return False
