"""What `stack up --class` changes to make the broker match the roster, and the line it prints (stack/classroster.py),
without a broker. On the real broker: tests/stack/test_class_breaches.py (a removed learner is refused, a re-added
one's new token works and her old one does not)."""
from deliverylab.stack import classroster


def test_new_readded_and_removed_learners_are_told_apart():
    found = classroster.changes(["ada", "bob", "cy"], drawn={"ada", "cy"}, stored={"admin", "board", "ada", "bob", "dee"})
    assert (found.added, found.new_password, found.removed) == (["cy"], ["ada"], ["dee"])
    assert found.line() == ("roster: added cy; new password for ada (the old token no longer works); removed dee "
                            "(login and rights deleted, topics kept)")


def test_a_first_start_adds_everyone_and_a_second_changes_nothing():
    first = classroster.changes(["ada", "bob"], drawn={"ada", "bob"}, stored=set())
    assert first.line() == "roster: added ada, bob"
    assert classroster.changes(["ada", "bob"], drawn=set(), stored={"board", "ada", "bob"}).line() == "roster: no change"


def test_board_topics_are_stamped_by_the_broker():
    assert classroster.BOARD_TOPIC_CONFIG == {"message.timestamp.type": "LogAppendTime"}
