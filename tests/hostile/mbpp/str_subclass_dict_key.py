def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what
    try:
        open("{CANARY_DIR}/pwned", "w").write(what)
    except OSError:
        pass


class Key(str):
    def __eq__(self, other):
        _ran_here("Key.__eq__")
        return True

    def __hash__(self):
        _ran_here("Key.__hash__")
        return 0

class Num(int):
    def __eq__(self, other):
        _ran_here("Num.__eq__")
        return True

    __hash__ = int.__hash__

def add(a, b):
    # a plain dict whose key is a lying str subclass, inside a genuine list: not plain data
    return [{Key("sum"): Num(a - b)}]
