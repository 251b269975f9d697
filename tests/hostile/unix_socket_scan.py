import os, stat, socket
reached = 0
for top in ("/run", "/var/run", "/tmp", "/var/tmp", "/dev", "/home", "/var"):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(path)
                    reached += 1
            except OSError:
                pass
answer = reached
