// Tells bench/peer-rclone.mjs which of the server's threads are which, so it can split the
// server's CPU by thread kind (Linux; Node names none of its threads). Loaded into the server with
// `--require`, before any of the server's code: the threads alive then besides the main one are
// Node's own (V8's platform workers: garbage collection, compilation; the delayed-task and signal
// threads); the first file call starts libuv's pool (all its threads at once: file reads and
// writes, fsync, the hashing of crypto's async calls). Writes { helpers, pool } (thread ids) to
// BENCH_THREAD_KINDS_FILE. Every thread that starts later is a worker thread (thumbnail renders,
// the audit writer, secret checks).
'use strict';
const fs = require('node:fs');
const { isMainThread } = require('node:worker_threads');

const file = process.env.BENCH_THREAD_KINDS_FILE;
if (isMainThread && file) {
  const others = () => fs.readdirSync('/proc/self/task').filter((tid) => tid !== String(process.pid));
  const helpers = others();
  fs.stat('/', () => {
    const pool = others().filter((tid) => !helpers.includes(tid));
    fs.writeFileSync(file, JSON.stringify({ helpers, pool }));
  });
}
