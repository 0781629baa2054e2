"""The error every layer may raise for a request that cannot work, and the command maps to exit code 2."""


class UsageError(ValueError):
    """Options that cannot work together, or a file that may not be written; the message says
    which and what to do."""


class OptionError(UsageError):
    """A value given for an option that cannot work.  The message names each option in
    ``options`` through a ``{name}`` placeholder in ``template``: by its Python name where Python
    raises it (``time_budget must be a number``), or as ``python`` words it (``force=True``), and
    by its flag where the command words it (:meth:`worded`: ``--time-budget must be a number``,
    ``--force``), so the two never disagree.

    Examples
    --------
    >>> error = OptionError("give {size} or {scale} (one of the two)", "size", "scale")
    >>> str(error), error.worded(lambda name: "--" + name)
    ('give size or scale (one of the two)', 'give --size or --scale (one of the two)')
    """

    def __init__(self, template: str, *options: str, **python: str):
        self.template, self.options = template, options + tuple(python)
        super().__init__(self.worded(lambda name: python.get(name, name)))

    def worded(self, name_of) -> str:
        """The message with each option named by ``name_of(option)``."""
        message = self.template
        for option in self.options:
            message = message.replace("{" + option + "}", name_of(option))
        return message
