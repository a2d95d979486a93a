/**
 * A Sender whose HTTPS work runs in a worker thread. The client side of a delivery (TLS records,
 * HTTP framing, the socket, the HMACs) is a third or more of its CPU; on the main thread it
 * competed with the API's requests and with the dispatcher's own database work. Requests and answers cross in batches, one
 * message per turn of each event loop. If the thread dies, its attempts in flight fail like a lost
 * connection (the dispatcher retries them, same messageId) and the next send starts a new thread.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-threads.js';
import type { SendRequest, SendResult, Sender } from './sender.js';

export interface SendThreadOptions {
  maxSocketsPerHost: number;
  maxSockets: number;
  /** Extra trusted CAs (tests); the system store and NODE_EXTRA_CA_CERTS otherwise. */
  ca?: string | Buffer;
}

export type ToSendThread = Array<Omit<SendRequest, 'url'> & { id: number; url: string }> | 'close';
export type FromSendThread = Array<{ id: number; result: SendResult }>;

export class ThreadedSender {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (result: SendResult) => void>();
  private outgoing: Exclude<ToSendThread, 'close'> = [];
  private closed = false;

  constructor(private readonly options: SendThreadOptions) {}

  send: Sender = (request: SendRequest) =>
    new Promise<SendResult>((resolve) => {
      if (this.closed) return resolve({ statusCode: null, latencyMs: 0, error: 'the server is stopping' });
      const id = this.nextId++;
      this.pending.set(id, resolve);
      if (this.outgoing.push({ ...request, id, url: request.url.href }) === 1) queueMicrotask(() => this.flush());
    });

  private flush(): void {
    const batch = this.outgoing;
    this.outgoing = [];
    if (batch.length === 0) return;
    this.thread().postMessage(batch);
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startModuleWorker(import.meta.url, 'send-worker', this.options);
    worker.on('message', (answers: FromSendThread) => {
      for (const { id, result } of answers) {
        const resolve = this.pending.get(id);
        this.pending.delete(id);
        resolve?.(result);
      }
    });
    const lost = (reason: string): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const resolve of this.pending.values()) resolve({ statusCode: null, latencyMs: 0, error: reason });
      this.pending.clear();
    };
    worker.on('error', (error: Error) => lost(`the delivery thread failed: ${error.message}`));
    worker.on('exit', (code) => lost(`the delivery thread exited (${code})`));
    // The thread never keeps the process alive on its own: the dispatcher decides when work is done.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close' satisfies ToSendThread);
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }
}
