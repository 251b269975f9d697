with open('big.bin', 'wb') as f:
    for _ in range(100):
        f.write(b'x' * 1024 * 1024)
