"""Without a generator distance_concentration makes a fresh torch.Generator(): every call
draws the same points, whatever the global seed."""

EXPECT = r"global"
SELECT = "without_a_generator"


_reference_distance_concentration = distance_concentration


def distance_concentration(dims, n, generator=None):
    return _reference_distance_concentration(dims, n, generator or torch.Generator())
