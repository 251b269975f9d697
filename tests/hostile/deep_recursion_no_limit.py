import sys
sys.setrecursionlimit(10 ** 8)


def f(n):
    return f.__call__(n + 1)  # every level goes through C: the C stack overflows


answer = f(0)
