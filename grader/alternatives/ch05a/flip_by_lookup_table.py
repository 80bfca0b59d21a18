"""flip_with_label maps labels through a lookup tensor (index = old label, value = mirrored
label) instead of masked assignments, and mirrors the image by indexing W with a reversed
arange: another mapping and another flip, the same picture and labels."""


def flip_with_label(image, label):
    w = image.shape[-1]
    flipped = image.index_select(-1, torch.arange(w - 1, -1, -1, device=image.device))
    n = max(int(LEFT), int(RIGHT), 3) + 1
    table = torch.arange(n)
    table[LEFT], table[RIGHT] = RIGHT, LEFT
    if isinstance(label, torch.Tensor):
        return flipped, table.to(label.device)[label.long()].to(torch.int64)
    return flipped, int(table[label]) if 0 <= label < n else label
