/**
 * A scanner's export, played by a process of its own (as a CBCT unit or an intraoral scanner
 * writes from another program, concurrently with the sync engine's event loop): makes folders,
 * writes files as fast as it can, pauses, renames finished folders into place. Driven over IPC by
 * test/helpers/scan-writer.ts; answers when each file appeared at its final path (Date.now()).
 *
 * Steps: ['mkdir', path] | ['write', path, bytes] | ['pause', ms] | ['rename', from, to, files],
 * paths absolute; `files` are the final paths of the files a rename brings in.
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

process.on('message', async ({ id, steps }) => {
  try {
    const appeared = [];
    for (const step of steps) {
      switch (step[0]) {
        case 'mkdir':
          fs.mkdirSync(step[1], { recursive: true });
          break;
        case 'write':
          fs.writeFileSync(step[1], Buffer.alloc(step[2], 0x44));
          appeared.push([step[1], Date.now()]);
          break;
        case 'pause':
          await sleep(step[1]);
          break;
        case 'rename': {
          fs.renameSync(step[1], step[2]);
          const at = Date.now();
          for (const file of step[3]) appeared.push([file, at]);
          break;
        }
        default:
          throw new Error(`unknown step ${String(step[0])}`);
      }
    }
    process.send({ id, appeared });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
