/**
 * A tus PATCH held open: its headers (and `first` bytes, if any) are sent at once, the rest only when
 * the test calls `end`. Meanwhile the request holds the upload (its lease on every instance), so a
 * test can send a rival PATCH, a DELETE or a clean-up through another instance and see it refused.
 */
import http from 'node:http';

export interface HeldPatch {
  /** Sends the rest of the body and resolves with the PATCH's status. */
  end(rest: Buffer): Promise<number>;
}

export function holdPatch(url: string, headers: Record<string, string>, offset: number, length: number, first?: Buffer): HeldPatch {
  const request = http.request(url, {
    method: 'PATCH',
    headers: { ...headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset), 'content-length': String(length) },
  });
  const answer = new Promise<number>((resolve, reject) => {
    request.once('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.once('error', reject);
  });
  if (first) request.write(first);
  else request.flushHeaders();
  return { end: (rest) => (request.end(rest), answer) };
}
