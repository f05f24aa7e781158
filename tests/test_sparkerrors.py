from deliverylab.sparkerrors import error_class


def test_error_class_is_the_first_bracketed_name_in_sparks_message():
    message = ("Pipeline 'x' stopped with an error (exit 1):\n[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] "
               "Checkpoint location file:/c is in an inconsistent state ... SQLSTATE: 42K03")
    assert error_class(message) == "STREAMING_CHECKPOINT_MISSING_METADATA_FILE"
    assert error_class("[STREAM_FAILED] Query [id = 1] terminated") == "STREAM_FAILED"
    assert error_class(ValueError("[STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST] x")) == \
        "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST"
    assert error_class("no class here [id = 1]") is None


def test_the_cause_under_the_wrappers_is_the_line_to_show():
    from deliverylab.sparkerrors import cause_line

    text = ("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
            "sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call "
            "last):\n  File \"x.py\", line 3\npyspark.errors.exceptions.captured.NumberFormatException: "
            "[CAST_INVALID_INPUT] The value 'forty' of the type \"STRING\" cannot be cast to \"DECIMAL(10,2)\" "
            "because it is malformed. SQLSTATE: 22018\n: org.apache.spark.SparkException: [TASK_WRITE_FAILED] ...")
    assert cause_line(text) == ("[CAST_INVALID_INPUT] The value 'forty' of the type \"STRING\" cannot be cast to "
                                "\"DECIMAL(10,2)\" because it is malformed.")
    assert cause_line("[STREAM_FAILED] Query [id = 1] terminated") is None


def test_pysparks_error_log_is_quiet_inside_and_restored_after():
    import logging

    from deliverylab.sparkerrors import quiet_error_log

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = logging.getLogger(name)
        before = logger.level
        with quiet_error_log():
            assert not logger.isEnabledFor(logging.ERROR)
        assert logger.level == before


def test_the_cause_class_is_found_in_the_chain_of_causes_under_the_wrappers():
    from deliverylab.sparkerrors import cause_class, with_causes

    class Captured(Exception):
        def __init__(self, text, cause=None, trace=None):
            super().__init__(text)
            self._cause, self._stackTrace = cause, trace

    conflict = Captured("[DELTA_CONCURRENT_DELETE_READ] ConcurrentDeleteReadException: This transaction "
                        "attempted to read one or more files that were deleted")
    stopped = Captured("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: [FOREACH_BATCH_"
                       "USER_FUNCTION_ERROR] An error occurred in the user provided function", cause=conflict)
    assert cause_class(stopped) == "DELTA_CONCURRENT_DELETE_READ"
    assert "ConcurrentDeleteReadException" in with_causes(stopped)
    assert cause_class(Captured("[STREAM_FAILED] x", trace="Caused by: [TASK_WRITE_FAILED] y")) is None
    assert cause_class(Captured("[STREAM_FAILED] x", trace="Caused by: [CAST_INVALID_INPUT] y")) == "CAST_INVALID_INPUT"
