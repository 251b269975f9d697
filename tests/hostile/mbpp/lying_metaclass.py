def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what
    try:
        open("{CANARY_DIR}/pwned", "w").write(what)
    except OSError:
        pass


class Meta(type):
    def __repr__(cls):
        _ran_here("Meta.__repr__")
        return "<class 'int'>"

    __str__ = __repr__

    def __eq__(cls, other):
        _ran_here("Meta.__eq__")
        return True

    def __instancecheck__(cls, obj):
        _ran_here("Meta.__instancecheck__")
        return True

    __hash__ = type.__hash__

class FakeInt(metaclass=Meta):
    def __eq__(self, other):
        _ran_here("FakeInt.__eq__")
        return True

    __hash__ = object.__hash__

    def __index__(self):
        _ran_here("FakeInt.__index__")
        return 3

def add(a, b):
    return FakeInt()
