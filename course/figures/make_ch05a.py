"""Draw what the model sees with and without the scaling step (input histograms), and the
two training runs' losses, from the reference solution.

python course/figures/make_ch05a.py   ->  course/figures/ch05a_inputs.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

tf = load_solution("ch05a", "transforms")
torch.set_num_threads(1)

train_x = tf.make_stripe_task(0)[0]
raw = train_x.float().flatten()
scaled = tf.fit_normalizer(train_x).apply(train_x).flatten()
runs = {scale: tf.train_with_pipeline(scale) for scale in (False, True)}

fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
axes[0].hist(raw.numpy(), bins=50, color="tab:red")
axes[0].set_title(f"without scaling: inputs in [{raw.min():.0f}, {raw.max():.0f}]", fontsize=9)
axes[0].set_xlabel("pixel value fed to the model")
axes[1].hist(scaled.numpy(), bins=50, color="tab:blue")
axes[1].set_title(f"with scaling: inputs in [{scaled.min():.1f}, {scaled.max():.1f}]", fontsize=9)
axes[1].set_xlabel("normalized value fed to the model")
for scale, color in ((False, "tab:red"), (True, "tab:blue")):
    run = runs[scale]
    label = f"{'with' if scale else 'without'} scaling: val acc {run.val_accuracy:.2f}"
    axes[2].plot(
        range(1, len(run.epoch_losses) + 1), run.epoch_losses, marker=".", color=color, label=label
    )
axes[2].set_yscale("log")
axes[2].set_xlabel("epoch")
axes[2].set_ylabel("mean training loss (log)")
axes[2].set_title("same model, same seed, same batches", fontsize=9)
axes[2].legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "ch05a_inputs.png", dpi=100)
for scale, run in runs.items():
    print(
        f"scale={scale}: inputs [{run.input_min:.2f}, {run.input_max:.2f}], first-epoch loss "
        f"{run.epoch_losses[0]:.2f}, last {run.epoch_losses[-1]:.3f}, val acc {run.val_accuracy:.2f}"
    )
print(HERE / "ch05a_inputs.png")
