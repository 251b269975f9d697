import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("{SOCKET}")
answer = 666
