import os
answer = len(os.listdir("/tmp")) + len(os.listdir("/dev/shm"))
