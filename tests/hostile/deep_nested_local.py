nested = []
for _ in range(100000):
    nested = [nested]
wide = {i: [i] for i in range(100000)}
answer = 8
