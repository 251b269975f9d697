import socket
socket.create_connection(('127.0.0.1', 22), timeout=1)
