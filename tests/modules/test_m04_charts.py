"""Module 04's state chart draws as an image and refuses empty input."""
import pytest

from deliverylab.config import CourseError
from deliverylab.modules.m04.charts import state_rows_chart


def history(rows):
    return [{"batch": b, "rows": 99, "state_rows": n, "late_rows": 0, "watermark": None} for b, n in enumerate(rows)]


def test_draws_one_line_per_pipeline_as_png():
    fig = state_rows_chart({"no watermark": history([97, 194, 291, 388, 400]),
                            "within watermark": history([97, 193, 219, 213, 136])}, distinct_orders=400)
    ax = fig.axes[0]
    assert len(ax.lines) == 3  # two pipelines and the reference line
    assert ax.get_ylim()[1] > 400
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_refuses_nothing_to_draw():
    with pytest.raises(CourseError):
        state_rows_chart({})
    with pytest.raises(CourseError):
        state_rows_chart({"a": []})
