"""Real-time analysis as docs/analysis.md describes it: the trial loads new steps as the job saves them;
wait_for_steps blocks until they are there; has_passed_step tells a step that is not there yet from one
that never will be; NoMoreData ends the loop once the job has ended."""

import json
import sys

from smdebug import modes
from smdebug.core.tensor import StepState
from smdebug.exceptions import NoMoreData
from smdebug.trials import create_trial

trial = create_trial(path=sys.argv[1], name="realtime")
report = {"states_while_running": [], "losses": {}}
step = 0
while True:
    state = trial.has_passed_step(step, mode=modes.TRAIN)
    report["states_while_running"].append([step, state.name])
    try:
        trial.wait_for_steps([step], mode=modes.TRAIN)
    except NoMoreData as end:
        report["no_more_data_at"] = end.step
        report["last_step"] = end.last_step
        break
    loss = trial.tensor("CrossEntropyLoss_output_0")
    report["losses"][step] = float(loss.value(step, mode=modes.TRAIN))
    step += 1
report["after_end"] = trial.has_passed_step(step + 5, mode=modes.TRAIN).name
report["state_enum"] = StepState.UNAVAILABLE.value
report["train_steps"] = trial.steps(mode=modes.TRAIN)
print(json.dumps(report))
