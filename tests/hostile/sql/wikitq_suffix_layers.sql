SELECT 's1' || replace(printf('%.*c', 30000, 'x'), 'x', ' (x) *')
