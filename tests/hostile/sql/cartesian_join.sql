SELECT count(*) FROM singer a, singer b, singer c, singer d, singer e, singer f
