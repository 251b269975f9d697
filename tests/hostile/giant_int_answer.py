answer = 10 ** 100000
