import os, time
stop = time.monotonic() + 1.0
made = 0
try:
    while time.monotonic() < stop:
        for base in ('/tmp', '/dev/shm'):
            os.close(os.open(f'{base}/f{made}', os.O_CREAT | os.O_WRONLY, 0o644))
        os.mkdir(f'/tmp/d{made}')
        made += 1
except OSError:
    pass
answer = 6
