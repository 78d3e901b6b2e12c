"""Put the local training platform behind SageMaker's training API through the dispatch seam.

botocore validates each request against the real SageMaker model first (see
``local_runtime.botocore_dispatch``), then the platform answers it.
"""

from __future__ import annotations

from local_runtime.botocore_dispatch import LocalDispatch, OperationCall
from local_runtime.training_platform import LocalTrainingPlatform


def register_training_api(dispatch: LocalDispatch, platform: LocalTrainingPlatform) -> None:
    def create(call: OperationCall):
        return platform.create_training_job(**call.params)

    def describe(call: OperationCall):
        return platform.describe_training_job(call.params["TrainingJobName"])

    def stop(call: OperationCall):
        return platform.stop_training_job(call.params["TrainingJobName"])

    def list_tags(call: OperationCall):
        return platform.list_tags(call.params["ResourceArn"])

    dispatch.register("sagemaker", "CreateTrainingJob", create)
    dispatch.register("sagemaker", "DescribeTrainingJob", describe)
    dispatch.register("sagemaker", "StopTrainingJob", stop)
    dispatch.register("sagemaker", "ListTags", list_tags)
