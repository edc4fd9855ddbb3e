-- param: n=1 required count
-- param: m
SELECT :n, :m;