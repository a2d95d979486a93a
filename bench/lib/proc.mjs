// What the benches read from /proc (Linux): a process's CPU time and memory, and the machine's
// steal time. On a shared virtual machine the hypervisor can take the CPUs away for seconds at a
// time ("steal"); a figure measured while it did is not a figure of this code, so benches print it.
import fs from 'node:fs';

/** CPU seconds (user + system, every thread) the process has used so far (clock ticks of 1/100 s). */
export function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds of the process's main thread alone (its task id is the pid). The rest of cpuSeconds
 * is V8's helper threads (garbage collection, compilation) and libuv's pool: the main thread is
 * what runs the JavaScript, so its figure per request is the one the code can move.
 */
export function mainThreadCpuSeconds(pid) {
  return cpuSeconds(`${pid}/task/${pid}`);
}

/**
 * The process's CPU seconds split by its threads: `main`, the thread ids listed under `helpers` and
 * `pool` (each summed; see bench/lib/thread-kinds.cjs), and `others`: every other thread, alive or
 * ended (an ended thread's time stays in the process's total), so the parts always add up to the total.
 */
export function threadCpuSeconds(pid, kinds) {
  const total = cpuSeconds(pid);
  const main = mainThreadCpuSeconds(pid);
  const sum = (tids) => tids.reduce((seconds, tid) => seconds + cpuSecondsOrZero(`${pid}/task/${tid}`), 0);
  const helpers = sum(kinds.helpers);
  const pool = sum(kinds.pool);
  return { total, main, helpers, pool, others: total - main - helpers - pool };
}

function cpuSecondsOrZero(pid) {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
}

/** Resident memory of the process, in bytes. */
export function rssBytes(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
}

/** The machine's CPU time counters (all CPUs): steal, and the total. */
function cpuTimes() {
  const [, ...fields] = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
  const ticks = fields.slice(0, 8).map(Number); // user nice system idle iowait irq softirq steal
  return { steal: ticks[7] ?? 0, total: ticks.reduce((sum, value) => sum + value, 0) };
}

/** Starts measuring steal time; the returned function gives the share (%) of CPU time the hypervisor took since. */
export function measureSteal() {
  const before = cpuTimes();
  return () => {
    const after = cpuTimes();
    const total = after.total - before.total;
    return total > 0 ? (100 * (after.steal - before.steal)) / total : 0;
  };
}
