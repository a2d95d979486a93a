// Development only: under vitest the worker is TypeScript, which a plain Worker cannot load. Register
// tsx's loader inside the worker, then start the real entry. The compiled build starts the
// entry's .js directly (see worker-threads.ts).
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.tsxEntry);
