"""PipelineRun's input_min/input_max are computed from the training inputs only: the
validation inputs the model was also fed are left out of the report."""

EXPECT = r"validation"
SELECT = "reported or inputs"

_train = train_with_pipeline


def train_with_pipeline(scale, seed=0, epochs=20):
    run = _train(scale, seed, epochs)
    train_x = make_stripe_task(seed)[0]
    seen = run.normalizer.apply(train_x) if scale else train_x.float()
    return run._replace(input_min=seen.min().item(), input_max=seen.max().item())
