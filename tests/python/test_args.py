"""Arguments of the scopes are checked when the scope is made, with or without the library."""

import pytest

import culprit


class Index:
    """An integer type that is not int, as numpy.int64 or a torch scalar is."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


@pytest.mark.parametrize("launches, window", [
    (None, (1, None)),
    (range(100, 200), (100, 199)),
    ((5, 9), (5, 9)),
    ([5, None], (5, None)),
    ((None, 7), (1, 7)),
    ((3, 3), (3, 3)),
    ((Index(4), Index(6)), (4, 6)),  # integer types of other libraries (numpy, torch) through __index__
])
def test_windows(launches, window):
    assert culprit.blocking(launches=launches).launches == window


@pytest.mark.parametrize("launches, error", [
    (range(0, 5), ValueError),
    (range(5, 5), ValueError),
    (range(1, 10, 2), ValueError),
    (range(1, 2**64 + 1), ValueError),  # beyond the library's launch numbers (len() would overflow)
    (range(2**64, 2**64 + 5), ValueError),
    ((0, 5), ValueError),
    ((9, 5), ValueError),
    ((1, 2**64), ValueError),
    ((1.5, 3), TypeError),
    ((True, 3), TypeError),
    (5, TypeError),
    ("1:5", TypeError),
    ((1, 2, 3), TypeError),
])
def test_bad_windows(launches, error):
    with pytest.raises(error):
        culprit.blocking(launches=launches)


def test_kernels():
    assert culprit.blocking().kernels == "*"
    assert culprit.blocking("").kernels == "*"
    assert culprit.blocking("*nll_loss*").kernels == "*nll_loss*"
    assert culprit.blocking(kernels="x" * 255).kernels == "x" * 255
    with pytest.raises(ValueError):
        culprit.blocking("x" * 256)
    with pytest.raises(ValueError):
        culprit.blocking("a\0b")
    with pytest.raises(TypeError):
        culprit.blocking(b"*nll*")


def test_decorating_a_non_function():
    with pytest.raises(TypeError):
        culprit.paused()(42)


def test_public_names():
    for name in culprit.__all__:
        assert hasattr(culprit, name), name
    assert issubclass(culprit.CulpritWarning, RuntimeWarning)
    assert culprit.__version__
