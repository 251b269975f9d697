import os
for base in ("/tmp", "/dev/shm", "/var/tmp"):
    for target in ("/", "/tmp", "/proc/self/cwd", os.getcwd(), "..", base):
        try:
            os.symlink(target, os.path.join(base, f"link{abs(hash(target))}"))
        except OSError:
            pass
    try:
        os.mkfifo(os.path.join(base, "fifo"))
        with open(os.path.join(base, "left-behind"), "w") as handle:
            handle.write("data for the next program")
    except OSError:
        pass
answer = 4
