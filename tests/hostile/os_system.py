import os
answer = os.system('touch {CANARY_DIR}/pwned')
