import os
for base in ("/tmp", "/dev/shm"):
    fd = os.open(base, os.O_RDONLY)
    for i in range(3000):  # far deeper than shutil.rmtree's recursion limit and PATH_MAX
        os.mkdir("d" * 40, dir_fd=fd)
        sub = os.open("d" * 40, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.close(fd)
answer = 3
