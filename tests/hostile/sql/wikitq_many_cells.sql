WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 999) SELECT x || replace(printf('%.*c', 400, 'x'), 'x', ' (x) *') FROM r
