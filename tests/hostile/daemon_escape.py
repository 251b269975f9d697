import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(600)
answer = 1
