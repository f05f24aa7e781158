"""What the planted-mistake modules of make test-labs share: a lesson of their own."""
import pytest


@pytest.fixture(scope="module")
def lesson(request):
    """A lesson for one module (test_lab05_planted.py: test-lab05-planted), cleaned up after its last test."""
    import deliverylab

    lesson = deliverylab.setup("test-" + request.module.__name__.removeprefix("test_").replace("_", "-"), quiet=True)
    yield lesson
    lesson.cleanup()
