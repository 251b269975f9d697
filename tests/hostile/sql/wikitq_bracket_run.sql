SELECT printf('%.*c', 300000, '[') || ']a'
