# HumanEval/38: a wrong decode_cyclic returning an object whose __eq__ is always true (and which
# flags the process that runs any of its methods: never the judge's).
def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what


class Liar:
    def __eq__(self, other):
        _ran_here("__eq__")
        return True

    def __ne__(self, other):
        _ran_here("__ne__")
        return False

    def __hash__(self):
        _ran_here("__hash__")
        return 0

    def __repr__(self):
        _ran_here("__repr__")
        return "'abc'"

    __str__ = __repr__


def encode_cyclic(s: str):
    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]
    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]
    return "".join(groups)


def decode_cyclic(s: str):
    return Liar()
