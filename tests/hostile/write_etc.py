open('/etc/lever_pwned', 'w').write('x')
