-- name: diff
-- description: Races new, fixed, changed and persisting between two runs, matched by identity (kernels, sites, kinds, class), never by address
-- param: run_a required  the older run: id, name or 'latest'
-- param: run_b required  the newer run: id, name or 'latest'
--
-- Only engines that ran in both runs are compared (a race found by an engine
-- that ran in one run only is neither new nor fixed), and only races whose
-- kernels the other run analysed: a kernel that run launched but left out
-- (--kernels) was not looked at, so a race in it is neither fixed nor new
-- (a kernel the other run never launched is: the program changed).
-- engines_a/engines_b are the engines that found the race in each run;
-- scope_verdict_a/_b the scoped engine's verdicts on it (a scoped race's
-- identity includes its verdict: 'changed' is a race both runs have whose
-- verdict differs, e.g. scope-fence before, missing-sync after);
-- count_a/count_b the largest count of any engine; potential is 1 when
-- every engine that found it (in run_b, or run_a for fixed races) marked it
-- potential (lockset).
WITH
a AS (SELECT id, engines FROM complete_runs WHERE id = :run_a),
b AS (SELECT id, engines FROM complete_runs WHERE id = :run_b),
left_out_a AS (SELECT DISTINCT kernel FROM launches, a WHERE run_id = a.id AND NOT analysed),
left_out_b AS (SELECT DISTINCT kernel FROM launches, b WHERE run_id = b.id AND NOT analysed),
ra AS (SELECT x.* FROM races x, a, b WHERE x.run_id = a.id
       AND instr(',' || b.engines || ',', ',' || x.engine || ',') > 0
       AND x.kernel_a NOT IN (SELECT kernel FROM left_out_b)
       AND x.kernel_b NOT IN (SELECT kernel FROM left_out_b)),
rb AS (SELECT x.* FROM races x, a, b WHERE x.run_id = b.id
       AND instr(',' || a.engines || ',', ',' || x.engine || ',') > 0
       AND x.kernel_a NOT IN (SELECT kernel FROM left_out_a)
       AND x.kernel_b NOT IN (SELECT kernel FROM left_out_a)),
-- engines per identity, in the run's engine order
ea AS (SELECT identity, group_concat(engine, ',') AS engines FROM
         (SELECT DISTINCT ra.identity, ra.engine,
                 instr(',' || a.engines || ',', ',' || ra.engine || ',') AS pos
          FROM ra, a ORDER BY ra.identity, pos)
       GROUP BY identity),
eb AS (SELECT identity, group_concat(engine, ',') AS engines FROM
         (SELECT DISTINCT rb.identity, rb.engine,
                 instr(',' || b.engines || ',', ',' || rb.engine || ',') AS pos
          FROM rb, b ORDER BY rb.identity, pos)
       GROUP BY identity),
va AS (SELECT identity, group_concat(scope_verdict, ',') AS verdict FROM
         (SELECT DISTINCT identity, scope_verdict FROM ra WHERE scope_verdict <> ''
          ORDER BY identity, scope_verdict)
       GROUP BY identity),
vb AS (SELECT identity, group_concat(scope_verdict, ',') AS verdict FROM
         (SELECT DISTINCT identity, scope_verdict FROM rb WHERE scope_verdict <> ''
          ORDER BY identity, scope_verdict)
       GROUP BY identity),
ia AS (SELECT identity, max(count) AS count, min(potential) AS potential FROM ra GROUP BY identity),
ib AS (SELECT identity, max(count) AS count, min(potential) AS potential FROM rb GROUP BY identity),
rep AS (SELECT identity, min(kernel_a) AS kernel_a, min(kernel_b) AS kernel_b,
               min(site_a) AS site_a, min(site_b) AS site_b, min(kind_a) AS kind_a,
               min(kind_b) AS kind_b, min(race_class) AS race_class
        FROM (SELECT * FROM ra UNION ALL SELECT * FROM rb) GROUP BY identity)
SELECT CASE WHEN ia.identity IS NULL THEN 'new'
            WHEN ib.identity IS NULL THEN 'fixed'
            WHEN va.verdict <> vb.verdict THEN 'changed'
            ELSE 'persisting' END AS status,
       CASE WHEN rep.kernel_a = rep.kernel_b THEN rep.kernel_a
            ELSE rep.kernel_a || ' / ' || rep.kernel_b END AS kernel,
       rep.race_class, rep.site_a, rep.kind_a, rep.site_b, rep.kind_b,
       coalesce(ea.engines, '') AS engines_a,
       coalesce(eb.engines, '') AS engines_b,
       coalesce(va.verdict, '') AS scope_verdict_a,
       coalesce(vb.verdict, '') AS scope_verdict_b,
       ia.count AS count_a,
       ib.count AS count_b,
       coalesce(ib.potential, ia.potential) AS potential
FROM rep
LEFT JOIN ia USING (identity) LEFT JOIN ib USING (identity)
LEFT JOIN ea USING (identity) LEFT JOIN eb USING (identity)
LEFT JOIN va USING (identity) LEFT JOIN vb USING (identity)
ORDER BY CASE WHEN ia.identity IS NULL THEN 1 WHEN ib.identity IS NULL THEN 2
              WHEN va.verdict <> vb.verdict THEN 3 ELSE 4 END,
         rep.kernel_a, rep.kernel_b, rep.site_a, rep.site_b, rep.kind_a, rep.kind_b, rep.race_class;
