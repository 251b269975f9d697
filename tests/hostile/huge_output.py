while True:
    print('x' * 1000)
