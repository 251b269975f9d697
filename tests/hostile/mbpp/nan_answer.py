def add(a, b):
    return float("nan")
