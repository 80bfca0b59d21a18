"""Every frame Dynamo attempted after the first counts as a recompile, including the
attempt that hit recompile_limit and was never compiled."""

EXPECT = r"recompile_limit"
SELECT = "compile_stats or counts_ignore or each_piece"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    torch.compiler.reset()
    before = counters["frames"]["total"]
    stats = _reference_compile_stats(fn, inputs, **compile_kwargs)
    attempted = counters["frames"]["total"] - before
    return stats._replace(recompiles=max(0, attempted - 1))
