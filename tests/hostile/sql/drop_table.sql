DROP TABLE singer
