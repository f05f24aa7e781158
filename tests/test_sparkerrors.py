from deliverylab.sparkerrors import error_class


def test_error_class_is_the_first_bracketed_name_in_sparks_message():
    message = ("Pipeline 'x' stopped with an error (exit 1):\n[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] "
               "Checkpoint location file:/c is in an inconsistent state ... SQLSTATE: 42K03")
    assert error_class(message) == "STREAMING_CHECKPOINT_MISSING_METADATA_FILE"
    assert error_class("[STREAM_FAILED] Query [id = 1] terminated") == "STREAM_FAILED"
    assert error_class(ValueError("[STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] x")) == \
        "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST"
    assert error_class("no class here [id = 1]") is None
