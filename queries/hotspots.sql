-- name: hotspots
-- description: The site pairs, kernels and source lines with the most races, across engines
-- param: run=latest  the run: id, name or 'latest'
-- param: limit=20    rows per section
--
-- races counts distinct race identities; occurrences adds, per identity, the
-- largest count any engine saw (engines see the same conflicts, so counts
-- are not added across engines); engines is how many engines found any.

-- section: Site pairs
WITH x AS (SELECT races.* FROM races JOIN complete_runs r ON r.id = races.run_id
           WHERE r.id = :run),
per AS (SELECT identity, site_a, site_b, kernel_a, kernel_b, max(count) AS occ
        FROM x GROUP BY identity)
SELECT p.site_a, p.site_b,
       CASE WHEN p.kernel_a = p.kernel_b THEN wr_demangle(p.kernel_a)
            ELSE wr_demangle(p.kernel_a) || ' / ' || wr_demangle(p.kernel_b) END AS kernel,
       count(*) AS races,
       (SELECT count(DISTINCT engine) FROM x
        WHERE x.site_a = p.site_a AND x.site_b = p.site_b
          AND x.kernel_a = p.kernel_a AND x.kernel_b = p.kernel_b) AS engines,
       sum(p.occ) AS occurrences
FROM per p
GROUP BY p.site_a, p.site_b, p.kernel_a, p.kernel_b
ORDER BY occurrences DESC, races DESC, p.site_a, p.site_b, kernel
LIMIT :limit;

-- section: Kernels
WITH x AS (SELECT races.* FROM races JOIN complete_runs r ON r.id = races.run_id
           WHERE r.id = :run),
per AS (SELECT identity, max(count) AS occ FROM x GROUP BY identity),
kid AS (SELECT kernel_a AS kernel, identity FROM x
        UNION SELECT kernel_b, identity FROM x)
SELECT wr_demangle(k.kernel) AS kernel,
       count(*) AS races,
       (SELECT count(DISTINCT engine) FROM x
        WHERE x.kernel_a = k.kernel OR x.kernel_b = k.kernel) AS engines,
       sum(per.occ) AS occurrences
FROM kid k JOIN per USING (identity)
GROUP BY k.kernel
ORDER BY occurrences DESC, races DESC, k.kernel
LIMIT :limit;

-- section: Source sites
WITH x AS (SELECT races.* FROM races JOIN complete_runs r ON r.id = races.run_id
           WHERE r.id = :run),
per AS (SELECT identity, max(count) AS occ FROM x GROUP BY identity),
sid AS (SELECT site_a AS site, identity FROM x
        UNION SELECT site_b, identity FROM x)
SELECT s.site,
       count(*) AS races,
       (SELECT count(DISTINCT engine) FROM x
        WHERE x.site_a = s.site OR x.site_b = s.site) AS engines,
       sum(per.occ) AS occurrences
FROM sid s JOIN per USING (identity)
WHERE s.site <> '?'
GROUP BY s.site
ORDER BY occurrences DESC, races DESC, s.site
LIMIT :limit;
