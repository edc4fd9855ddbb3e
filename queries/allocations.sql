-- name: allocations
-- description: The allocations of a run and the races whose first example falls in each
-- param: run=latest  the run: id, name or 'latest'
--
-- A race is placed by its first example (lowest trace position), so a race
-- spread over several allocations shows under one.  Races outside every
-- known allocation are listed as '(unknown)'.  races counts distinct
-- identities over all engines; occurrences adds the largest count per
-- identity.  A race on another block's shared word (through distributed
-- shared memory, ex_space 'dsmem') is placed in the shared allocation.
WITH
x AS (SELECT races.identity, races.engine, races.count, races.kernel_a, races.kernel_b,
             races.ex_alloc,
             CASE races.ex_space WHEN 'dsmem' THEN 'shared' ELSE races.ex_space END AS ex_space
      FROM races JOIN complete_runs r ON r.id = races.run_id
      WHERE r.id = :run),
al AS (SELECT a.name, a.space, a.base, a.size FROM allocations a
       JOIN complete_runs r ON r.id = a.run_id WHERE r.id = :run),
per AS (SELECT identity, ex_space, ex_alloc, max(count) AS occ, min(kernel_a) AS kernel_a,
               min(kernel_b) AS kernel_b
        FROM x GROUP BY identity, ex_space, ex_alloc),
placed AS (SELECT p.*, CASE WHEN EXISTS (SELECT 1 FROM al WHERE al.name = p.ex_alloc
                                         AND al.space = p.ex_space)
                            THEN p.ex_alloc ELSE '(unknown)' END AS alloc
           FROM per p),
rows AS (SELECT name, space, base, size FROM al
         UNION SELECT alloc, ex_space, NULL, NULL FROM placed WHERE alloc = '(unknown)')
SELECT rows.name AS allocation, rows.space,
       CASE WHEN rows.base IS NULL THEN '' ELSE printf('0x%x', rows.base) END AS base,
       rows.size,
       count(DISTINCT p.identity) AS races,
       coalesce(sum(p.occ), 0) AS occurrences,
       (SELECT count(DISTINCT engine) FROM x WHERE x.ex_space = rows.space
          AND (x.ex_alloc = rows.name OR (rows.name = '(unknown)'
               AND NOT EXISTS (SELECT 1 FROM al WHERE al.name = x.ex_alloc
                               AND al.space = x.ex_space)))) AS engines
FROM rows
LEFT JOIN placed p ON p.alloc = rows.name AND p.ex_space = rows.space
GROUP BY rows.name, rows.space, rows.base, rows.size
ORDER BY races DESC, occurrences DESC, rows.space, rows.name;
