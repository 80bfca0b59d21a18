"""reasons keeps one text per failing graph id: when a new length fails the guards of every
earlier graph, only the first failure of each graph survives, and the order is lost."""

EXPECT = r"every recorded text|in order"
SELECT = "reason_in_order"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    stats = _reference_compile_stats(fn, inputs, **compile_kwargs)
    seen, kept = set(), []
    for text in stats.reasons:
        graph = text.split(":")[0]
        if graph not in seen:
            seen.add(graph)
            kept.append(text)
    return stats._replace(reasons=kept)
