"""train_gpt never zeroes the gradients: every step adds its gradient to all the
earlier ones, and AdamW follows their running sum."""

EXPECT = r"zero_grad|not learned"
SELECT = "training_beats"

EDITS = [("        opt.zero_grad(set_to_none=True)\n", "")]
