-- name: x y
SELECT 1;
