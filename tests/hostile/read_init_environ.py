answer = open('/proc/1/environ').read()
