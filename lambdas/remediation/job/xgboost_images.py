"""SageMaker's XGBoost framework images: the versions a run_spec may name and the registry of every region.
Standard library only; ``lambdas.remediation.job.training_images`` builds the image URIs from these tables.

Sources, as checked on 2026-11-23 (``training_images.TABLES_REVIEWED``):

* The SageMaker Python SDK's ``image_uri_config/xgboost.json`` (sagemaker-core, last changed 2026-07-09 when 3.2-0
  was added): the training scope's versions ``0.90-1`` ... ``1.7-1``, ``3.0-5``, ``3.2-0``, all in the repository
  ``sagemaker-xgboost`` with the version itself as the tag (no processor or Python suffix: one image serves CPU and
  GPU instances), and one account table shared by every version since 1.5-1 (37 regions). Its alias ``"1"`` is the
  old built-in algorithm image (repository ``xgboost``), which has no script mode: refused here.
* aws/sagemaker-xgboost-container: ``docker/<version>/base/Dockerfile.cpu`` (1.7-1: XGBoost 1.7.4, CUDA 11.6;
  3.0-5: XGBoost 3.0.5, CUDA 12.6; both Python 3.10) and the script-mode contract its training toolkit
  (sagemaker-containers) follows: hyperparameters as ``--name value`` and ``SM_HPS``, channels as
  ``SM_CHANNEL_<NAME>``, the model in ``SM_MODEL_DIR``, checkpoints in ``/opt/ml/checkpoints``.
* Only the versions whose XGBoost has the callback API the debugger's hook uses (``TrainingCallback``,
  ``num_boosted_rounds``; XGBoost >= 1.4) are offered: 1.7-1, 3.0-5 and 3.2-0.
"""

from __future__ import annotations

XGBOOST_REPOSITORY = "sagemaker-xgboost"

#: run_spec.framework_version -> the XGBoost release in the image. Newest first.
XGBOOST_IMAGES: dict[str, str] = {"3.2-0": "3.2.0", "3.0-5": "3.0.5", "1.7-1": "1.7.4"}

#: The version a run_spec with framework "xgboost" gets unless it names one: the XGBoost the local loop trains with
#: (xgboost-cpu==3.2.0 in requirements.txt), so a run that works locally runs on the same release in the cloud.
DEFAULT_XGBOOST_VERSION = "3.2-0"

#: The SDK's registry table of the XGBoost images (the same account for every supported version).
XGBOOST_ACCOUNT_BY_REGION: dict[str, str] = {
    "af-south-1": "510948584623",
    "ap-east-1": "651117190479",
    "ap-northeast-1": "354813040037",
    "ap-northeast-2": "366743142698",
    "ap-northeast-3": "867004704886",
    "ap-south-1": "720646828776",
    "ap-south-2": "628508329040",
    "ap-southeast-1": "121021644041",
    "ap-southeast-2": "783357654285",
    "ap-southeast-3": "951798379941",
    "ap-southeast-4": "106583098589",
    "ca-central-1": "341280168497",
    "ca-west-1": "190319476487",
    "cn-north-1": "450853457545",
    "cn-northwest-1": "451049120500",
    "eu-central-1": "492215442770",
    "eu-central-2": "680994064768",
    "eu-north-1": "662702820516",
    "eu-south-1": "978288397137",
    "eu-south-2": "104374241257",
    "eu-west-1": "141502667606",
    "eu-west-2": "764974769150",
    "eu-west-3": "659782779980",
    "il-central-1": "898809789911",
    "me-central-1": "272398656194",
    "me-south-1": "801668240914",
    "sa-east-1": "737474898029",
    "us-east-1": "683313688378",
    "us-east-2": "257758044811",
    "us-gov-east-1": "237065988967",
    "us-gov-west-1": "414596584902",
    "us-iso-east-1": "833128469047",
    "us-isob-east-1": "281123927165",
    "us-isof-east-1": "108575199400",
    "us-isof-south-1": "124985052026",
    "us-west-1": "746614075791",
    "us-west-2": "246618743249",
}
