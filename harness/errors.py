"""Bad input is reported as one line naming the file and the fix, never as a traceback; a case's
own error is one message (`describe_error`)."""
import traceback


class HarnessInputError(Exception):
    """A user-facing problem with configs, expectations, cases or options.

    The plugin turns it into pytest.UsageError, which pytest prints as a single
    'ERROR: ...' line and exit status 4.
    """

    def __init__(self, where: str, problem: str, fix: str = ""):
        self.where, self.problem, self.fix = where, problem, fix
        text = f"{where}: {problem}" + (f"; {fix}" if fix else "")
        super().__init__(text)


class ReplayedError(Exception):
    """A case's error given again from a record of it (harness.stages.stretches): its message is the
    one the original error was described by."""

    def __init__(self, description: str):
        super().__init__(description)
        self.description = description


def describe_error(error: BaseException) -> str:
    """The error's type and message, plus where in Python it was raised."""
    if isinstance(error, ReplayedError):
        return error.description
    frames = traceback.extract_tb(error.__traceback__)
    location = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {str(error).strip()}{location}"
