"""train_gpt measures the validation loss inside the training loop, once the last step is
done (if step == steps - 1): the same 8 batches after training whenever there is a step,
but a run of zero steps never validates and returns the nan it started from."""

EXPECT = r"steps=0.*no step"
TASK = "ch10.8"

EDITS = [
    (
        "    losses = []\n    model.train()\n",
        '    losses = []\n    val_loss = float("nan")  # set by the last step\n    model.train()\n',
    ),
    ("    for _ in range(steps):\n", "    for step in range(steps):\n"),
    (
        "        losses.append(loss.item())\n"
        "    model.eval()\n"
        "    with torch.no_grad():\n"
        "        val = [model(*batch_fn(val_data, block_size, batch_size, gen))[1].item() for _ in range(8)]\n"
        "    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)",
        "        losses.append(loss.item())\n"
        "        if step == steps - 1:\n"
        "            model.eval()\n"
        "            with torch.no_grad():\n"
        "                val = [\n"
        "                    model(*batch_fn(val_data, block_size, batch_size, gen))[1].item()\n"
        "                    for _ in range(8)\n"
        "                ]\n"
        "            val_loss = sum(val) / len(val)\n"
        "    return TrainResult(model, tokenizer, losses, val_loss, val_data)",
    ),
]
