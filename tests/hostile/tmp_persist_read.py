import os, time
time.sleep(0.3)
answer = 1 if os.path.exists('/tmp/lever_persist') else 0
