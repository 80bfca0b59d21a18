"""train_gpt keeps each step's loss as a detached tensor and turns them into floats at the
end with torch.stack(...).tolist(): a run of zero steps (the validation loss of the freshly
built model) raises instead of returning no training losses."""

EXPECT = r"steps=0.*no step"
TASK = "ch10.8"

EDITS = [
    ("        losses.append(loss.item())", "        losses.append(loss.detach())"),
    (
        "    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)",
        "    losses = torch.stack(losses).tolist()\n"
        "    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)",
    ),
]
