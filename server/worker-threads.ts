/**
 * Starts a worker thread whose entry sits next to the calling module. Compiled, that is `<name>.js`;
 * from TypeScript sources (vitest, tsx) only `<name>.ts` exists, and a bootstrap registers tsx
 * inside the worker first. The entry finds its own data under `workerData.data`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';

export interface WorkerBoot<T> {
  data: T;
  /** Set when the worker starts through the tsx bootstrap (development only). */
  tsxEntry?: string;
}

export function startModuleWorker<T>(callerUrl: string, name: string, data: T, resourceLimits?: ResourceLimits): Worker {
  const compiled = new URL(`./${name}.js`, callerUrl);
  if (existsSync(fileURLToPath(compiled))) return new Worker(compiled, { workerData: { data } satisfies WorkerBoot<T>, resourceLimits });
  const boot: WorkerBoot<T> = { data, tsxEntry: new URL(`./${name}.ts`, callerUrl).href };
  return new Worker(new URL('./tsx-worker-bootstrap.mjs', import.meta.url), { workerData: boot, resourceLimits });
}
