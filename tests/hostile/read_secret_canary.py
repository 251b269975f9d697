answer = open('{CANARY_DIR}/secret.txt').read()
