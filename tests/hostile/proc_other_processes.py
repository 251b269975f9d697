import os
me = os.getpid()
others = []
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != me:
        try:
            others.append(open(f"/proc/{entry}/cmdline", "rb").read())
        except OSError:
            others.append(b"?")
answer = len(others)
