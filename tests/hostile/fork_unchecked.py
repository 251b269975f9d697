import os
os.fork()
answer = 1
