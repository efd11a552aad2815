from labkit import exercises

import pytest


def choice():
    return exercises.Choice(
        "How often does a Python print run in a tf.function called 3 times?",
        explanation="It runs while tracing only.",
        hint="Think tracing.",
        choices={"a": "once", "b": "3 times"},
        answer="a",
        wrong={"b": "That is tf.print."},
    )


def test_choice_right_wrong_and_bad_input():
    q = choice()
    assert q.check("A").correct and "tracing only" in str(q.check("a"))
    fb = q.check("b")
    assert not fb and "tf.print" in fb.message and "solution" in fb.message
    assert "not one of the choices (a, b)" in q.check("z").message
    empty = q.check(None)
    assert not empty and "No answer yet" in empty.message and "Think tracing" in empty.message
    assert q.attempts == 4  # None does not count as an attempt
    assert "(a) once" in q.solution().message


def test_number_and_text():
    n = exercises.Number("Speed-up?", explanation="ratio of medians", answer=2.0, rel_tol=0.1)
    assert n.check("2.1").correct
    assert "too high" in n.check(3).message and "too low" in n.check(1).message
    assert "not a number" in n.check("fast").message
    t = exercises.Text("Which op?", explanation="AutoGraph emits it.", accepted=("tf.cond", "cond"))
    assert t.check(" `TF.Cond` ").correct and not t.check("if").correct


def test_author_mistakes_are_errors():
    with pytest.raises(ValueError, match="not among the choices"):
        exercises.Choice("?", explanation="", choices={"a": "x"}, answer="b")
    with pytest.raises(ValueError, match="accepted"):
        exercises.Text("?", explanation="")
