import os
chunk = b'x' * (1 << 20)
for base in ('/tmp', '/dev/shm'):
    for n in range(40):  # 15 MiB files (below RLIMIT_FSIZE) until the tmpfs is full
        try:
            with open(f'{base}/big{n}', 'wb') as handle:
                for _ in range(15):
                    handle.write(chunk)
        except OSError:
            break
answer = 7
