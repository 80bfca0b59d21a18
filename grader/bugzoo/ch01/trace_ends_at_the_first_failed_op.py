"""trace_shapes stops recording at the first op that raises inside the mode (it notes the
failure and re-raises), taking the first failed op for the end of the program: a program
that catches that error itself and takes a fallback (x.t().view(-1) failing, then
x.t().reshape(-1)) keeps running, but its fallback's ops are missing from the trace."""

EXPECT = r"must travel on into fn exactly as it would"
SELECT = "after_a_crash"
TASK = "ch01.4"
EDITS = [
    (
        "        out = func(*args, **(kwargs or {}))  # the mode is switched off while it runs\n",
        "        if getattr(self, 'failed', False):\n"
        "            return func(*args, **(kwargs or {}))\n"
        "        try:\n"
        "            out = func(*args, **(kwargs or {}))\n"
        "        except Exception:\n"
        "            self.failed = True  # the program broke here: the trace ends\n"
        "            raise\n",
    )
]
