open('{CANARY_DIR}/canary.txt', 'w').write('pwned')
answer = 1
