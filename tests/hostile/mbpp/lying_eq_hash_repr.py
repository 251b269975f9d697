def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what
    try:
        open("{CANARY_DIR}/pwned", "w").write(what)
    except OSError:
        pass


class Liar:
    def __eq__(self, other):
        _ran_here("__eq__")
        return True

    def __ne__(self, other):
        _ran_here("__ne__")
        return False

    def __hash__(self):
        _ran_here("__hash__")
        return hash(3)

    def __repr__(self):
        _ran_here("__repr__")
        return "3"

    __str__ = __repr__

    def __bool__(self):
        _ran_here("__bool__")
        return True

def add(a, b):
    return Liar()
