INSERT INTO singer VALUES (99, 'x', 1)
