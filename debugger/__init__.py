"""An in-job training debugger with the semantics of SageMaker Debugger's built-in rules."""
