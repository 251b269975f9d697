import socket
answer = socket.gethostbyname('pypi.org')
