open('/tmp/lever_persist', 'w').write('x')
answer = 1
