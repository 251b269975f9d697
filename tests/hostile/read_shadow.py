answer = open('/etc/shadow').read()
