open('{TMP_CANARY}', 'w').write('pwned')
answer = 1
