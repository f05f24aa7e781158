"""The Reset lesson button: shown in a kernel only, with no plain-text copy for nbval to compare."""
from deliverylab.workshop import button


class FakeLesson:
    def __init__(self):
        self.resets = 0

    def reset(self, log=print):
        self.resets += 1


def test_no_button_outside_a_kernel():
    assert button.in_kernel() is False
    assert button.show_reset_button(FakeLesson()) is False


def test_the_button_resets_the_lesson_and_reports_in_its_output():
    lesson = FakeLesson()
    widget = button.reset_widget(lesson)
    reset, report = widget.children
    assert reset.description == "Reset lesson" and "topics, tables and checkpoints" in reset.tooltip
    reset.click()
    assert lesson.resets == 1 and not reset.disabled


def test_in_a_kernel_it_is_displayed_without_text_plain(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(button, "in_kernel", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    assert button.show_reset_button(FakeLesson()) is True
    bundle, raw = shown[0]
    assert raw and list(bundle) == ["application/vnd.jupyter.widget-view+json"]
