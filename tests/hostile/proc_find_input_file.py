import os
me = str(os.getpid())
hits = 0
for entry in os.listdir("/proc"):
    if not entry.isdigit() or entry == me:
        continue
    try:
        cmd = open(f"/proc/{entry}/cmdline", "rb").read()
    except OSError:
        continue
    if b"--input" in cmd or b"pytest" in cmd or b"lever" in cmd:
        hits += 1
answer = hits
