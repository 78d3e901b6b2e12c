"""The deployed stack's name and output keys: the stack writes them, the cloud CLI reads them back with
DescribeStacks. No CDK import here, so `remediate cloud` loads without aws_cdk."""

DEFAULT_STACK_NAME = "TrainingRemediation"

OUTPUT_STATE_MACHINE_ARN = "StateMachineArn"
OUTPUT_TOPIC_ARN = "NotificationTopicArn"
OUTPUT_BUCKET_NAME = "ArtifactsBucketName"
OUTPUT_SAGEMAKER_ROLE_ARN = "SageMakerRoleArn"
OUTPUT_JOB_NAME_PREFIX = "JobNamePrefix"
