answer = list(range(1000000))
