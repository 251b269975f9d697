import os
os.remove('{CANARY_DIR}/canary.txt')
answer = 1
