def f(n):
    return f(n + 1)
answer = f(0)
