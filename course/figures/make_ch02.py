"""Draw the ch02 figure: the book's detached two-stage run beside the repaired one.

python course/figures/make_ch02.py   ->  course/figures/ch02_two_stage.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

ag = load_solution("ch02", "autograd")


def detached_stage(w1, x, log):
    features = (w1 * x).detach()
    log.append(features)
    return features


STEPS, LR = 400, 0.02
broken = ag.run_two_stage(detached_stage, STEPS, LR)
fixed = ag.two_stage_train(STEPS, LR)

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
for run, style, label in ((broken, "--", "detached"), (fixed, "-", "repaired")):
    left.plot(run.w1s, "C0" + style, label=f"w1 ({label})")
    left.plot(run.w2s, "C1" + style, label=f"w2 ({label})")
    right.plot([max(v, 1e-14) for v in run.losses], "k" + style, label=label)
left.set_xlabel("step")
left.set_xlim(0, 150)
left.set_ylabel("weight")
left.set_title("detached: w1 frozen, w2 does all the work")
left.legend(fontsize=7)
right.set_yscale("log")
right.set_xlabel("step")
right.set_ylabel("MSE loss (log scale)")
right.set_title("the loss alone does not show the bug")
right.legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "ch02_two_stage.png", dpi=100)
print(HERE / "ch02_two_stage.png")
