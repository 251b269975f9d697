import os
visible = [p for p in ("{REPO}/tests", "{REPO}/setup.py", "/home", "/run", "/sys", "/etc/shadow", "/var/log", "/work/shared")
           if os.path.exists(p)]
answer = len(visible)
