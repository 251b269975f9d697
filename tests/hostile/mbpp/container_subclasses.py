def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what
    try:
        open("{CANARY_DIR}/pwned", "w").write(what)
    except OSError:
        pass


class L(list):
    def __eq__(self, other):
        _ran_here("L.__eq__")
        return True

    def __iter__(self):
        _ran_here("L.__iter__")
        return iter([3])

    def __len__(self):
        _ran_here("L.__len__")
        return 1

class D(dict):
    def __eq__(self, other):
        _ran_here("D.__eq__")
        return True

    def items(self):
        _ran_here("D.items")
        return [(1, 3)]

    __hash__ = object.__hash__

class F(float):
    def __eq__(self, other):
        _ran_here("F.__eq__")
        return True

    __hash__ = float.__hash__

    def __sub__(self, other):
        _ran_here("F.__sub__")
        return 0.0

    __rsub__ = __sub__

    def __abs__(self):
        _ran_here("F.__abs__")
        return 0.0

def add(a, b):
    kind = (a + b) % 3
    return [L([a - b]), D({1: a - b}), F(a - b)][kind]
