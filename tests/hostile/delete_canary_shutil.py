import shutil
shutil.rmtree('{CANARY_DIR}')
answer = 1
