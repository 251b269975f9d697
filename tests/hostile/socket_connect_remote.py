import socket
socket.create_connection(('1.1.1.1', 53), timeout=1)
