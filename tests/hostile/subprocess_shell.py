import subprocess
subprocess.run(['sh', '-c', 'touch {CANARY_DIR}/pwned'])
answer = 1
