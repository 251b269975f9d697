print('z' * 100000)
answer = 1
