// Drain N no-op jobs with Graphile Worker; prints {"jobs": n, "seconds": s} on stdout.
// usage: node graphile_drain.js DSN N batched(0|1) CONCURRENCY
const { run, runMigrations, Logger } = require("graphile-worker");
// Errors only: a log line per job would be a cost FlowForge and the other peers do not pay.
const logger = new Logger(() => (level, message) => { if (level === "error") console.error(message); });
const { Pool } = require("pg");

async function main() {
  const [dsnArg, nArg, batchedArg, concArg] = process.argv.slice(2);
  const n = parseInt(nArg, 10);
  const batched = batchedArg === "1";
  const connectionString = dsnArg;
  await runMigrations({ connectionString, logger });
  const pool = new Pool({ connectionString, max: 4 });
  await pool.query("delete from graphile_worker._private_jobs");
  await pool.query(
    `select graphile_worker.add_jobs(array(
       select json_populate_record(null::graphile_worker.job_spec, json_build_object('identifier', 'noop'))
       from generate_series(1, $1)))`, [n]);
  let done = 0;
  let resolveDone;
  const finished = new Promise((r) => { resolveDone = r; });
  const worker = {};
  if (batched) {
    worker.localQueue = { size: 500 };
    worker.completeJobBatchDelay = 0;
    worker.failJobBatchDelay = 0;
  }
  const t0 = process.hrtime.bigint();
  const runner = await run({
    connectionString,
    concurrency: parseInt(concArg || "10", 10),
    noHandleSignals: true,
    logger,
    pollInterval: 1000,
    preset: { worker },
    taskList: { noop: async () => {} },
  });
  runner.events.on("job:complete", () => { done += 1; if (done >= n) resolveDone(); });
  const timer = setTimeout(() => resolveDone(), 120000);
  await finished;
  clearTimeout(timer);
  // Completions may still be batched in memory: wait until the table agrees.
  for (let i = 0; i < 500; i++) {
    const { rows } = await pool.query("select count(*)::int as c from graphile_worker._private_jobs");
    if (rows[0].c === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await runner.stop();
  await pool.end();
  process.stdout.write(JSON.stringify({ jobs: done, seconds }) + "\n");
}

main().catch((e) => { console.error(e); process.exit(1); });
