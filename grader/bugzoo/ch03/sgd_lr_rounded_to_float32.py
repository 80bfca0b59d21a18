"""sgd_step multiplies by ``torch.tensor(lr)``, a float32 tensor: float64 parameters are
then moved by a learning rate rounded to float32's few digits."""

EXPECT = r"float64's precision"
SELECT = "generated_tensors"
EDITS = [("                p -= lr * p.grad\n", "                p -= torch.tensor(lr) * p.grad\n")]
