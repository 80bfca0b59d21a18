"""The location is a fixed number of frames above the mode: right for ops torch runs in
C (mul, detach, item), but for functions torch writes in Python (F.relu, F.normalize,
Tensor.norm) that frame is inside torch, not the user's line."""

EXPECT = r"location"
SELECT = "find_graph_cuts"


def _user_location():
    frame = sys._getframe(2)  # _user_location <- __torch_function__ <- the op's caller
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
