"""What the sync and async suites share: steps, waiting, expected errors."""

import time


def step(name):
    print(f"- {name}", flush=True)


def until(what, cond, seconds=15.0):
    """Polls cond() until it holds, or fails after seconds."""
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class raises:
    """with raises(Exc, "text"): the block must raise Exc (or a subclass)
    whose message holds text; the exception is kept as .error."""

    def __init__(self, exc, text=""):
        self.exc, self.text, self.error = exc, text, None

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        if typ is None:
            raise AssertionError(f"expected {self.exc.__name__}, nothing was raised")
        if not issubclass(typ, self.exc):
            raise AssertionError(f"expected {self.exc.__name__}, got {typ.__name__}: {value}") from value
        if self.text not in str(value):
            raise AssertionError(f"expected {self.exc.__name__} with {self.text!r}, got {value!r}") from value
        self.error = value
        return True


def eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}" if what else f"got {got!r}, want {want!r}")
