"""The location is the innermost frame, which lies in the diagnostic or in torch, not
the user line that cut the graph."""

EXPECT = r"location"
SELECT = "find_graph_cuts"


def _user_location():
    frame = sys._getframe(1)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
