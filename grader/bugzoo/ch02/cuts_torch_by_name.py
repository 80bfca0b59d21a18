"""'Inside torch' is tested as the word torch anywhere in a frame's path, so a user's file
such as torch_helpers.py or ~/pytorch-course/prog.py is skipped like torch's own and the
cut is blamed on a frame further out."""

EXPECT = r"contains the word torch"
SELECT = "any_file"
EDITS = [
    (
        "        if not path.startswith(_TORCH_DIR) and path != _THIS_FILE:\n",
        '        if "torch" not in path and path != _THIS_FILE:\n',
    )
]
