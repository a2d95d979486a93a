// Worker entry of SecretVerifier: one scrypt at a time, computed on this thread (scryptSync), never
// on libuv's thread pool, which file reads and writes use.
import { parentPort } from 'node:worker_threads';
import { verifySecretSync } from './secrets.js';
import type { FromSecretWorker, ToSecretWorker } from './secret-verifier.js';

parentPort!.on('message', (message: ToSecretWorker) => {
  let answer: FromSecretWorker;
  try {
    answer = { id: message.id, matches: verifySecretSync(message.secret, message.stored) };
  } catch (error) {
    answer = { id: message.id, matches: false, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(answer);
});
