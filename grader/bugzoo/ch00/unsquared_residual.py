"""The loss forgets the square, so the 'gradient' is just x."""

EXPECT = r"square"


def gradient_at(w, x, target):
    w_t = torch.tensor(float(w), requires_grad=True)
    (x * w_t - target).backward()
    return w_t.grad.item()
