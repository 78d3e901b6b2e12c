"""What the debugger writes, on disk and to S3, and how it is read back byte for byte.

    layout.py               the output directory's files: step files (npz), metrics, collections, end marker
    step_writer.py          a step's tensors packed and written from a background thread
    state_store.py          smdebug's state beside the checkpoints (a restarted spot job goes on)
    tensorboard_events.py   TensorBoard event files
    s3_mirror.py            the output mirrored to S3

Uses only the shared vocabulary (debugger.core); the trial (debugger.trial) reads what this package writes.
"""
