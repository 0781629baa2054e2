"""The error every layer may raise for a request that cannot work, and the command maps to exit code 2;
:class:`WordedError`, what any error that names options is besides; and :class:`Note`, a line that
names options in its reader's words, as the error does."""


class UsageError(ValueError):
    """Options that cannot work together, or a file that may not be written; the message says
    which and what to do."""


class WordedError(Exception):
    """An error whose message names options as :class:`OptionError`'s does, whatever kind of error
    it is besides (a damaged checkpoint, a port taken): ``{name}`` placeholders in ``template``, read
    by Python's name (or as ``python`` words it) and, by :meth:`worded`, in the command's words.
    Given a message alone, it is that message."""

    def __init__(self, template: str, *options: str, **python: str):
        self.template, self.options, self.python = template, options + tuple(python), python
        super().__init__(_worded(template, self.options, lambda name: python.get(name, name)))

    def worded(self, name_of) -> str:
        """The message with each option named by ``name_of(option)``; a :class:`Note` given as
        an option's Python words (a whole call) is worded as the note words itself."""
        return _worded(self.template, self.options, lambda name: self.python[name].worded(name_of)
                       if isinstance(self.python.get(name), Note) else name_of(name))


class OptionError(WordedError, UsageError):
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


class Note(str):
    """A line of progress or advice that names options as :class:`OptionError` does: as a ``str``,
    in Python's words (``give size N``); :meth:`worded`, in the command's (``give --size N``).  A
    job logs it to whoever called it, and each caller reads it in its own words.

    Examples
    --------
    >>> note = Note("give {start} random to watch a network learn", "start")
    >>> str(note), note.worded(lambda name: "--" + name)
    ('give start random to watch a network learn', 'give --start random to watch a network learn')
    """

    def __new__(cls, template: str, *options: str, **python: str):
        names = options + tuple(python)
        note = super().__new__(cls, _worded(template, names, lambda name: python.get(name, name)))
        note.template, note.options = template, names
        return note

    def worded(self, name_of) -> str:
        """The line with each option named by ``name_of(option)``."""
        return _worded(self.template, self.options, name_of)


def _worded(template: str, options, name_of) -> str:
    for option in options:
        template = template.replace("{" + option + "}", name_of(option))
    return template
