-- name: p
-- param: =3 nothing
SELECT :x;
