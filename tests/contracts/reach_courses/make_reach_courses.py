"""Record the real courses ``tests/contracts/test_objective_reach.py`` judges: each job runs all its epochs through the
job launcher (what SageMaker's script mode runs; ``bench/objective_reach_probe.run_course``) with ObjectiveOutOfReach
judging but never stopping, and keeps the objective's metric as the job reported it once per epoch. A few hundred
bytes per course; development seeds only.

    .venv/bin/python tests/contracts/reach_courses/make_reach_courses.py                     # every course
    .venv/bin/python tests/contracts/reach_courses/make_reach_courses.py regression-rmse-spiky-flat
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "bench"))

import numpy as np  # noqa: E402
import objective_reach_probe  # noqa: E402
import zoo_data  # noqa: E402
import zoo_random  # noqa: E402

REGRESSION = {"source_dir": "bench/zoo_scripts", "entry_point": "tabular_regression.py",
              "definitions": [{"Name": "validation:rmse", "Regex": r"validation:rmse ([0-9.eE+-]+|nan)"}],
              "objective": {"metric_name": "validation:rmse", "type": "Minimize", "target_value": 0.4}}

COURSES: dict[str, dict[str, Any]] = {
    "regression-rmse-spiky-flat": {
        "about": "The random zoo's plain MLP regressor under SGD (momentum 0.9) at 0.3 for 40 epochs against RMSE <= "
        "0.40, on make_friedman1 with only the features that hardly predict the target (x4 and the five noise "
        "features): the held-out RMSE stays near 0.96 with spikes far above it. It cannot reach 0.40.",
        **REGRESSION,
        "data": {"dataset": "friedman1", "seed": 3, "keep_features": [4, 5, 6, 7, 8, 9]},
        "hyperparameters": {"lr": 0.3, "optimizer": "sgd", "loss": "mse", "epochs": 40, "batch-size": 32,
                            "hidden": 64, "layers": 2, "activation": "relu", "seed": 0},
    },
}  # fmt: skip
LOGLINE = {"source_dir": "bench/zoo_scripts", "entry_point": "tabular_logline.py", "epochs_name": "n-epochs",
           "definitions": [{"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"}],
           "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.8}}
COURSES["tanh-adam-plateau-then-climb"] = {
    "about": "A deep narrow tanh MLP (4 x 32, initial weights at 0.3 of their usual scale) under Adam at 0.002, batch "
    "128, 12 epochs, on the random zoo's tabular data (seed 5) against accuracy >= 0.8: it rises to 0.74 by epoch 3, "
    "stalls there until epoch 7, then climbs and meets 0.8 at its last epoch. A projection from its recent rate alone "
    "came within 2.5% of stopping it.",
    **LOGLINE, "data": {"dataset": "tabular", "seed": 5},
    "hyperparameters": {"learning-rate": 0.002, "n-epochs": 12, "bs": 128, "n-layers": 4, "hidden-units": 32,
                        "act": "tanh", "batchnorm": 0, "opt": "adam", "init-gain": 0.3, "scale-inputs": 1, "seed": 5},
}  # fmt: skip
COURSES["tanh-adam-slow-climb"] = {
    "about": "A deep narrow tanh MLP (4 x 32) under Adam at 0.002, batch 128, 12 epochs, on the random zoo's tabular "
    "data (seed 6) against accuracy >= 0.8: 0.73 after epoch 4, climbing ever slower, it meets 0.8 at epoch 10.",
    **LOGLINE, "data": {"dataset": "tabular", "seed": 6},
    "hyperparameters": {"learning-rate": 0.002, "n-epochs": 12, "bs": 128, "n-layers": 4, "hidden-units": 32,
                        "act": "tanh", "batchnorm": 0, "opt": "adam", "scale-inputs": 1, "seed": 6},
}  # fmt: skip


def channels(course: dict[str, Any], work: Path) -> dict[str, Path]:
    if "zoo" in course:
        seed, index = course["zoo"]
        return zoo_random.write_channels(zoo_random.draw(seed, index + 1)[index], True, work / "zoo")
    settings = dict(course["data"])
    keep = settings.pop("keep_features", None)
    x_train, y_train, x_held, y_held = zoo_data.make_data(settings.pop("dataset"), settings.pop("seed"), **settings)
    if keep is not None:  # only these input columns reach the script
        x_train, x_held = x_train[:, keep], x_held[:, keep]
    out = {}
    for name, x, y in (("train", x_train, y_train), ("validation", x_held, y_held)):
        directory = work / "data" / name
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "x.npy", x)
        np.save(directory / "y.npy", y)
        out[name] = directory
    return out


def record(name: str, work: Path) -> dict[str, Any]:
    course = COURSES[name]
    hyperparameters = course["hyperparameters"]
    row = objective_reach_probe.run_course(
        name, REPO / course["source_dir"], course["entry_point"],
        [item for key, value in hyperparameters.items() for item in (f"--{key}", str(value))],
        channels(course, work), course["objective"], int(hyperparameters[course.get("epochs_name", "epochs")]),
        course.get("definitions"), work, timeout=1800,
    )  # fmt: skip
    if "error" in row:
        raise SystemExit(f"{name}: {row['error']}")
    return {"course": name, "about": course["about"], "hyperparameters": hyperparameters,
            "objective": course["objective"], "planned_epochs": row["planned"], "values": row["values"]}


def main(argv: list[str]) -> int:
    names = argv or list(COURSES)
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            recorded = record(name, Path(work))
            (HERE / f"{name}.json").write_text(json.dumps(recorded, indent=1) + "\n")
            print(name, recorded["values"], file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
