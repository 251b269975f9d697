SELECT printf('%.*c', 9000000, 'x'), printf('%.*c', 9000000, 'y') FROM singer LIMIT 2
