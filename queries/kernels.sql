-- name: kernels
-- description: Every kernel of a run with its launches and the races it takes part in, per class
-- param: run=latest  the run: id, name or 'latest'
--
-- A race between two launches counts for both kernels ('host' stands for
-- host copies; names demangled for reading).  launched_at: where the host
-- launched the kernel (schema version 2; empty where the trace does not
-- say).  races counts distinct identities over all engines; the class
-- columns split them; engines is how many engines found any.
WITH
x AS (SELECT races.* FROM races JOIN complete_runs r ON r.id = races.run_id
      WHERE r.id = :run),
kid AS (SELECT kernel_a AS kernel, identity, race_class, potential, engine FROM x
        UNION SELECT kernel_b, identity, race_class, potential, engine FROM x),
k AS (SELECT kernel FROM launches l JOIN complete_runs r ON r.id = l.run_id WHERE r.id = :run
      UNION SELECT kernel FROM kid)
SELECT wr_demangle(k.kernel) AS kernel,
       (SELECT count(*) FROM launches l WHERE l.run_id = :run AND l.kernel = k.kernel) AS launches,
       (SELECT group_concat(grid || ' x ' || block, '; ') FROM
          (SELECT DISTINCT grid, block FROM launches l
           WHERE l.run_id = :run AND l.kernel = k.kernel ORDER BY grid, block)) AS shape,
       (SELECT group_concat(site, '; ') FROM
          (SELECT DISTINCT site FROM launches l
           WHERE l.run_id = :run AND l.kernel = k.kernel AND l.site <> '' ORDER BY site))
         AS launched_at,
       count(DISTINCT kid.identity) AS races,
       count(DISTINCT CASE WHEN kid.potential = 0 THEN kid.identity END) AS definite,
       count(DISTINCT CASE WHEN kid.race_class = 'intra-warp' THEN kid.identity END) AS intra_warp,
       count(DISTINCT CASE WHEN kid.race_class = 'inter-warp' THEN kid.identity END) AS inter_warp,
       count(DISTINCT CASE WHEN kid.race_class = 'inter-block' THEN kid.identity END) AS inter_block,
       count(DISTINCT CASE WHEN kid.race_class = 'inter-kernel' THEN kid.identity END) AS inter_kernel,
       count(DISTINCT kid.engine) AS engines
FROM k LEFT JOIN kid ON kid.kernel = k.kernel
GROUP BY k.kernel
ORDER BY races DESC, k.kernel;
