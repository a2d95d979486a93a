// Worker entry of ThreadedSender: the HTTPS client (TLS, HTTP/1.1, keep-alive pools) of webhook
// deliveries, off the thread that serves the API and runs the dispatcher's database work.
import { parentPort, workerData } from 'node:worker_threads';
import type { WorkerBoot } from '../worker-threads.js';
import { HttpsSender } from './sender.js';
import type { SendThreadOptions, ToSendThread, FromSendThread } from './send-thread.js';

const { data: options } = workerData as WorkerBoot<SendThreadOptions>;
const sender = new HttpsSender(options);
let results: FromSendThread = [];

function post(): void {
  const batch = results;
  results = [];
  parentPort!.postMessage(batch);
}

parentPort!.on('message', (message: ToSendThread) => {
  if (message === 'close') {
    sender.close();
    parentPort!.close();
    return;
  }
  for (const request of message) {
    void sender
      .send({ ...request, url: new URL(request.url) })
      .then((result) => {
        // Answers that arrive together go back in one message.
        if (results.push({ id: request.id, result }) === 1) setImmediate(post);
      });
  }
});
