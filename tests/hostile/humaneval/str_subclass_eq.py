# HumanEval/50: a wrong decode_shift returning a str subclass whose __eq__ is always true (and
# which flags the process that runs it: never the judge's).
def _ran_here(what):
    """Flags the process that runs a lying method: the parent must never be it."""
    import builtins
    builtins.__lever_hostile_ran__ = what


class Yes(str):
    def __eq__(self, other):
        _ran_here("__eq__")
        return True

    def __ne__(self, other):
        _ran_here("__ne__")
        return False

    def __hash__(self):
        _ran_here("__hash__")
        return 0


def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s: str):
    return Yes("x")
