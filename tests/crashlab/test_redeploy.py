"""Where a redeployed pipeline resumes, and how a learner's failed pipeline becomes one line (no broker)."""
import json
from types import SimpleNamespace

import pytest

from deliverylab.config import CourseError
from deliverylab.crashlab import record, redeploy

from fakes import ENDS, TOPIC, make_checkpoint


def test_a_redeploy_resumes_where_the_last_committed_batch_ended(tmp_path):
    pipe = SimpleNamespace(checkpoint=str(make_checkpoint(tmp_path, ENDS, committed=2)), topic=TOPIC)
    # offsets/2 is planned but not committed: the new query starts after batch 1, not batch 2
    assert json.loads(redeploy.resume_offsets_json(pipe)) == {TOPIC: {"0": 500, "1": 500}}


def learners(failure=None):
    return SimpleNamespace(runs_learner_code=True, failure=failure)


def test_a_learners_failure_is_kept_as_one_line_and_the_course_variants_is_raised():
    pipe = learners()
    with record.failure_kept(pipe):
        raise CourseError("Pipeline 'mine' stopped with an error (exit 1):\nTraceback ...\n"
                          "  File \"pipeline_code.py\", line 3\nNameError: name 'sqlite3' is not defined")
    assert pipe.failure == "NameError: name 'sqlite3' is not defined"
    course = SimpleNamespace(runs_learner_code=False, failure=None)
    with pytest.raises(CourseError), record.failure_kept(course):
        raise CourseError("the broker is down")


def test_the_courses_own_words_lose_their_class_name():
    message = ("Pipeline 'x' stopped with an error (exit 1):\n"
               "deliverylab.config.CourseError: Your query ended by itself after it had caught up")
    assert record.failure_line(message) == "Your query ended by itself after it had caught up"
