# HumanEval/38: the check asks for decode_cyclic(encode_cyclic(s)) == s; this program replaces
# the prompt's encode_cyclic by the identity, so the identity "decodes".
def encode_cyclic(s: str):
    return s


def decode_cyclic(s: str):
    return s
