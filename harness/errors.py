"""Bad input is reported as one line naming the file and the fix, never as a traceback."""


class HarnessInputError(Exception):
    """A user-facing problem with configs, expectations, cases or options.

    The plugin turns it into pytest.UsageError, which pytest prints as a single
    'ERROR: ...' line and exit status 4.
    """

    def __init__(self, where: str, problem: str, fix: str = ""):
        self.where, self.problem, self.fix = where, problem, fix
        text = f"{where}: {problem}" + (f"; {fix}" if fix else "")
        super().__init__(text)
