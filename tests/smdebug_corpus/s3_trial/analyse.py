"""An S3 trial (docs/analysis.md "Creating S3 trial")."""

import json
import sys

from smdebug.trials import create_trial

trial = create_trial(path=sys.argv[1], name="s3_run")
weight = trial.tensor("Sequential_0.weight")
print(
    json.dumps(
        {
            "steps": trial.steps(),
            "tensor_names": trial.tensor_names(),
            "gradients": trial.tensor_names(collection="gradients"),
            "weight_shape": list(weight.value(4).shape),
            "weight_l2_at_2": float(weight.reduction_value(2, "l2")),
            "loss_steps": trial.tensor("CrossEntropyLoss_output_0").steps(),
            "collections": sorted(trial.collections()),
        }
    )
)
