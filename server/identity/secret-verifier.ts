/**
 * Client secrets are checked (scrypt, tens of milliseconds of CPU each) by a few threads of their
 * own, with a bounded queue in front: a flood of guesses costs the server at most those threads'
 * CPU, never libuv's thread pool (which file reads and writes share, so downloads would wait behind
 * the guesses), and a request that finds the queue full is answered at once ('busy': 503 with
 * Retry-After) instead of waiting behind the flood. A check marked urgent (a client on an address
 * where it obtained a token before) has a queue of its own, served first: a flood of guesses does
 * not keep the clinic's own workstations from their tokens.
 *
 * Threads start when the server listens, or at the first check (the admin CLI, which builds the
 * same context, never starts them), and do not keep the process alive. A thread that dies fails the checks it held; the next
 * check starts a new one.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-threads.js';

export type ToSecretWorker = { id: number; secret: string; stored: string };
export type FromSecretWorker = { id: number; matches: boolean; error?: string };

export interface SecretVerifierOptions {
  /** Threads checking secrets at once. */
  threads: number;
  /** Checks that may wait for a thread (and as many urgent ones); one more is refused as 'busy'. */
  queue: number;
}

export type Verdict = 'match' | 'mismatch' | 'busy';

interface Job {
  id: number;
  secret: string;
  stored: string;
  resolve: (verdict: Verdict) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  job: Job | undefined;
}

export class SecretVerifier {
  private readonly threads: Thread[] = [];
  private readonly waiting: Job[] = [];
  private readonly urgent: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: SecretVerifierOptions) {}

  /** Checks in a thread or waiting for one. */
  get inFlight(): number {
    return this.waiting.length + this.urgent.length + this.threads.filter((thread) => thread.job !== undefined).length;
  }

  /** Starts the threads ahead of the first token request (the server does once it listens). */
  start(): void {
    while (!this.closed && this.threads.length < this.options.threads) this.startThread();
  }

  verify(secret: string, stored: string, urgent = false): Promise<Verdict> {
    if (this.closed) return Promise.reject(new Error('the secret verifier is closed'));
    const idle = this.idleThread();
    const queue = urgent ? this.urgent : this.waiting;
    if (!idle && queue.length >= this.options.queue) return Promise.resolve('busy');
    return new Promise<Verdict>((resolve, reject) => {
      const job: Job = { id: this.nextId++, secret, stored, resolve, reject };
      if (idle) this.run(idle, job);
      else queue.push(job);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.urgent.splice(0), ...this.waiting.splice(0)]) job.reject(new Error('the secret verifier is closed'));
    await Promise.all(this.threads.splice(0).map((thread) => thread.worker.terminate()));
  }

  private idleThread(): Thread | undefined {
    const idle = this.threads.find((thread) => thread.job === undefined);
    if (idle) return idle;
    if (this.threads.length < this.options.threads) return this.startThread();
    return undefined;
  }

  private run(thread: Thread, job: Job): void {
    thread.job = job;
    thread.worker.ref();
    thread.worker.postMessage({ id: job.id, secret: job.secret, stored: job.stored } satisfies ToSecretWorker);
  }

  private startThread(): Thread {
    const worker = startModuleWorker<undefined>(import.meta.url, 'secret-worker', undefined, { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 });
    worker.unref();
    const thread: Thread = { worker, job: undefined };
    worker.on('message', (answer: FromSecretWorker) => {
      const job = thread.job;
      thread.job = undefined;
      if (job && job.id === answer.id) {
        if (answer.error) job.reject(new Error(`a client secret could not be checked: ${answer.error}`));
        else job.resolve(answer.matches ? 'match' : 'mismatch');
      }
      const next = this.urgent.shift() ?? this.waiting.shift();
      if (next) this.run(thread, next);
      else worker.unref();
    });
    const lost = (reason: string): void => {
      const index = this.threads.indexOf(thread);
      if (index < 0) return;
      this.threads.splice(index, 1);
      thread.job?.reject(new Error(`the thread checking client secrets stopped (${reason})`));
      thread.job = undefined;
      // What waited for this thread goes to a new one.
      const next = this.urgent.shift() ?? this.waiting.shift();
      if (next && !this.closed) this.run(this.startThread(), next);
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.threads.push(thread);
    return thread;
  }
}
