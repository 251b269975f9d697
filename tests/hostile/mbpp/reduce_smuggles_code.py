def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what
    try:
        open("{CANARY_DIR}/pwned", "w").write(what)
    except OSError:
        pass

import os

class Smuggler:
    """If the parent ever pickles, copies or unpickles the answer, it runs code of the program."""

    def __reduce__(self):
        _ran_here("__reduce__")
        return (os.system, ("touch {CANARY_DIR}/pwned",))

    def __reduce_ex__(self, protocol):
        return self.__reduce__()

    def __getstate__(self):
        _ran_here("__getstate__")
        return {}

    def __eq__(self, other):
        _ran_here("Smuggler.__eq__")
        return True

    __hash__ = object.__hash__

def add(a, b):
    return Smuggler()
