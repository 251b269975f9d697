def add(a, b):
    return (x for x in [a + b])
