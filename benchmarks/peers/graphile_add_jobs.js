// Enqueue N jobs with Graphile Worker's add_jobs in one call; prints {"jobs": n, "seconds": s} on stdout.
// usage: node graphile_add_jobs.js DSN N
// The job specs are built by the client and sent as one array parameter, as an
// application would (FlowForge's side sends its inputs the same way); only the
// call is timed. Migrations run first (not timed), and the jobs table is left
// as it is, so rounds accumulate like FlowForge's runs do.
const { runMigrations, Logger } = require("graphile-worker");
const logger = new Logger(() => (level, message) => { if (level === "error") console.error(message); });
const { Client } = require("pg");

async function main() {
  const [connectionString, nArg] = process.argv.slice(2);
  const n = parseInt(nArg, 10);
  await runMigrations({ connectionString, logger });
  const client = new Client({ connectionString });
  await client.connect();
  const specs = JSON.stringify(Array.from({ length: n }, () => ({ identifier: "noop", payload: {} })));
  await client.query("select 1");
  const t0 = process.hrtime.bigint();
  const { rows } = await client.query(
    "select count(*)::int as c from graphile_worker.add_jobs(array(select json_populate_record(null::graphile_worker.job_spec, j) from json_array_elements($1::json) j))",
    [specs]);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await client.end();
  process.stdout.write(JSON.stringify({ jobs: rows[0].c, seconds }) + "\n");
}

main().catch((e) => { console.error(e); process.exit(1); });
